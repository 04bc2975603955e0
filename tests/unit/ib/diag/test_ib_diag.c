/* SPDX-License-Identifier: Apache-2.0 */
/* The words for RDMA completion errors and RTR failures (ib_diag.c): each
 * status maps to its likely cause and fix in the words nccl-net-diag explain
 * uses (common/wcstatus.h), refined by what the plugin knows (the buffer's
 * memory, the connection's first write, a forced GID index); only the
 * fields valid on error are printed, and a flush names the first error. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "common/wcstatus.h"
#include "tap.h"
#include "transport/ib/dev/ib.h"

static struct topo_dev td;
static struct ib_dev dev;
static struct hello peer;

static void setup(void) {
  memset(&td, 0, sizeof(td));
  td.name = "mlx5_4";
  td.ib_port = 1;
  td.gid_index = 3;
  td.gid[10] = td.gid[11] = 0xff;
  td.gid[12] = 10, td.gid[13] = 1, td.gid[14] = 4, td.gid[15] = 5;
  td.gid_type = GID_TYPE_V2;
  td.netdev = "xgbe4";
  ipaddr_parse(&td.subnet, "10.1.4.5/24");
  td.ll = TOPO_LL_ETH;
  td.mtu = 4096;
  memset(&dev, 0, sizeof(dev));
  dev.td = &td;
  snprintf(dev.label, sizeof(dev.label), "mlx5_4 port 1");
  memset(&peer, 0, sizeof(peer));
  snprintf(peer.host, sizeof(peer.host), "host-b");
  snprintf(peer.addr, sizeof(peer.addr), "10.0.0.7<46417>");
  peer.ib.is_present = 1;
  snprintf(peer.ib.dev, sizeof(peer.ib.dev), "mlx5_bond_0");
  peer.ib.port = 1;
  peer.ib.gid_index = 3;
  peer.ib.gid[10] = peer.ib.gid[11] = 0xff;
  peer.ib.gid[12] = 10, peer.ib.gid[15] = 7;
  peer.ib.gid_type = 2;
  snprintf(peer.ib.netdev, sizeof(peer.ib.netdev), "bond0");
  snprintf(peer.ib.subnet, sizeof(peer.ib.subnet), "10.0.0.0/24");
}

/* needle within the first `within` characters: the cause leads. */
static int leads_with(const char *t, const char *needle, size_t within) {
  const char *at = strstr(t, needle);
  return at && (size_t)(at - t) + strlen(needle) <= within;
}

/* One NCCL line holds a WARN: the connection's words around this text
 * (about 140 characters, the receiver's "the sending side ended the
 * connection") and NCCL's prefix (about 60) leave this much. */
#define DIAG_MAX 800

static void diag_mem(enum ibv_wc_status st, int first, enum wc_memory mem, const char *first_error,
                     char *out, size_t cap) {
  struct ibv_wc wc;
  memset(&wc, 0xab, sizeof(wc)); /* fields that are not valid on error must not be printed */
  wc.status = st;
  wc.qp_num = 0x1234;
  wc.vendor_err = 0x81;
  struct ib_wc_context cx = {"the RDMA write of a message", first, mem, first_error};
  ib_diag_wc(&dev, &peer, &wc, &cx, out, cap);
}

static void diag(enum ibv_wc_status st, int first, const char *first_error, char *out, size_t cap) {
  diag_mem(st, first, WC_MEM_UNKNOWN, first_error, out, cap);
}

static void retry_first(void) {
  char t[2400];
  setup();
  diag(IBV_WC_RETRY_EXC_ERR, 1, "", t, sizeof(t));
  CHECK(strstr(t, "IBV_WC_RETRY_EXC_ERR (12)") && strstr(t, "qp 0x1234") &&
          strstr(t, "vendor_err 0x81"),
        "status, qp and vendor_err: %s", t);
  CHECK(strstr(t, "first RDMA write after RTR"), "the first-write cause: %s", t);
  CHECK(strstr(t, "::ffff:10.1.4.5") && strstr(t, "::ffff:10.0.0.7") && strstr(t, "10.0.0.0/24"),
        "both GIDs and the remote subnet: %s", t);
  CHECK(!strstr(t, "ib_write_bw -d") && strlen(t) < DIAG_MAX,
        "the commands go to the details, the text fits one line (%zu): %s", strlen(t), t);
  CHECK(!strstr(t, "opcode") && !strstr(t, "byte_len"), "fields invalid on error printed: %s", t);
  ib_diag_path_details(&dev, &peer, t, sizeof(t));
  CHECK(strstr(t, "ib_write_bw -d mlx5_bond_0 -x 3 on host-b (10.0.0.7)") &&
          strstr(t, "ib_write_bw -d mlx5_4 -x 3 <its address>"),
        "the details: how to confirm the path, the peer by host and address: %s", t);
}

/* The peer's port down, as its liveness answers said: a retry error is
 * that flap's, named before the status's generic causes; a return long
 * before is not. */
static void retry_peer_port(void) {
  char t[2400];
  setup();
  struct ibv_wc wc;
  memset(&wc, 0xab, sizeof(wc));
  wc.status = IBV_WC_RETRY_EXC_ERR;
  wc.qp_num = 0x1234;
  wc.vendor_err = 0x81;
  struct ib_wc_context cx = {.what = "the RDMA write of a message",
                             .is_first = true,
                             .is_peer_down = true,
                             .peer_port_s = 3};
  ib_diag_wc(&dev, &peer, &wc, &cx, t, sizeof(t));
  CHECK(strstr(t, "the peer's RDMA port (host-b's mlx5_bond_0) has been down for 3 s") &&
          !strstr(t, "first RDMA write after RTR") && !strstr(t, wc_status_info(12)->cause) &&
          strlen(t) < DIAG_MAX,
        "down now: the peer's port is the cause, first: %s", t);
  cx.is_peer_down = false, cx.is_peer_back = true, cx.peer_port_s = 2;
  ib_diag_wc(&dev, &peer, &wc, &cx, t, sizeof(t));
  CHECK(strstr(t, "was down until 2 s ago"), "back lately: still its cause: %s", t);
  cx.peer_port_s = 3600;
  ib_diag_wc(&dev, &peer, &wc, &cx, t, sizeof(t));
  CHECK(!strstr(t, "the peer's RDMA port") && strstr(t, "first RDMA write after RTR"),
        "back an hour ago: not this failure's cause: %s", t);
  wc.status = IBV_WC_REM_ACCESS_ERR;
  cx.peer_port_s = 2;
  ib_diag_wc(&dev, &peer, &wc, &cx, t, sizeof(t));
  CHECK(!strstr(t, "the peer's RDMA port"), "only a retry error is a flap's: %s", t);
}

static void retry_later(void) {
  char t[2400];
  setup();
  diag(IBV_WC_RETRY_EXC_ERR, 0, "", t, sizeof(t));
  CHECK(strstr(t, wc_status_info(12)->cause) && strstr(t, wc_status_info(12)->fix) &&
          strstr(t, "NCCL_IB_TIMEOUT"),
        "a later retry error, in explain's words: %s", t);
}

static void rem_access(void) {
  char t[2400];
  setup();
  diag(IBV_WC_REM_ACCESS_ERR, 0, "", t, sizeof(t));
  CHECK(strstr(t, "IBV_WC_REM_ACCESS_ERR (10)") && strstr(t, "rkey") && strstr(t, "deregistered") &&
          strstr(t, wc_status_info(10)->fix),
        "rkey or registration, and the fix: %s", t);
}

static void flush_names_first(void) {
  char t[2400];
  setup();
  diag(IBV_WC_WR_FLUSH_ERR, 0, "the RDMA write completed with IBV_WC_REM_ACCESS_ERR", t, sizeof(t));
  CHECK(strstr(t, "IBV_WC_WR_FLUSH_ERR") &&
          strstr(t, "The first error was: the RDMA write completed "
                    "with IBV_WC_REM_ACCESS_ERR"),
        "a flush names the first error: %s", t);
  diag(IBV_WC_WR_FLUSH_ERR, 0, "", t, sizeof(t));
  CHECK(strstr(t, "first error was not seen here"),
        "a flush without a first error says where to look: %s", t);
}

static void rtr_timeout(void) {
  char t[3000];
  setup();
  ib_diag_rtr(&dev, &peer, ETIMEDOUT, t, sizeof(t));
  CHECK(leads_with(t,
                   "RTR failed with Connection timed out (ETIMEDOUT) from GID 3 ::ffff:10.1.4.5 "
                   "(xgbe4, 10.1.4.0/24) of mlx5_4 port 1 to GID 3 ::ffff:10.0.0.7 (bond0, "
                   "10.0.0.0/24) of mlx5_bond_0 port 1 on host-b",
                   200),
        "no specific cause: the failure and both sides in short first: %s", t);
  CHECK(strstr(t, "NCCL_IB_HCA=^mlx5_bond_0") && strlen(t) < DIAG_MAX, "the fix, in %zu: %s",
        strlen(t), t);
  ib_diag_path_details(&dev, &peer, t, sizeof(t));
  CHECK(strstr(t, "local GID 3 ::ffff:10.1.4.5 (RoCE v2, xgbe4, 10.1.4.0/24)") &&
          strstr(t, "remote GID 3 ::ffff:10.0.0.7 (RoCE v2, bond0, 10.0.0.0/24) of mlx5_bond_0 "
                    "port 1 on host-b (10.0.0.7)"),
        "the details: both sides with index, type, netdev, subnet and host: %s", t);
  peer.ib.is_off_plane = 1;
  ib_diag_rtr(&dev, &peer, ETIMEDOUT, t, sizeof(t));
  CHECK(leads_with(t, "mlx5_bond_0 on host-b is set apart by its host's layout", 100) &&
          strstr(t, "NCCL_IB_HCA=^mlx5_bond_0 on every node") && !strstr(t, "Likely causes"),
        "the peer's own plane verdict first, no generic causes: %s", t);
}

static void rtr_link_local_and_einval(void) {
  char t[3000];
  setup();
  memset(peer.ib.gid, 0, 16);
  peer.ib.gid[0] = 0xfe, peer.ib.gid[1] = 0x80, peer.ib.gid[15] = 1;
  ib_diag_rtr(&dev, &peer, ETIMEDOUT, t, sizeof(t));
  CHECK(leads_with(t, "GID 3 fe80::1 of mlx5_bond_0 on host-b is link-local", 100) &&
          strstr(t, "NCCL_IB_GID_INDEX=-1") && !strstr(t, "Likely causes"),
        "link-local called out first: %s", t);
  ib_diag_rtr(&dev, &peer, EINVAL, t, sizeof(t));
  CHECK(strstr(t, "EINVAL") && strstr(t, "NCCL_IB_GID_INDEX"), "EINVAL points at the GID index: %s",
        t);
}

/* What the Linux kernel answers at RTR on RoCE (measured on soft-RoCE,
 * tests/rxe), each with its own cause. */
static void rtr_kernel_errnos(void) {
  char t[3000];
  setup();
  ib_diag_rtr(&dev, &peer, ETIMEDOUT, t, sizeof(t));
  const char *subnet = strstr(t, "different subnets"), *down = strstr(t, "is down"),
             *arp = strstr(t, "rp_filter=1 or arp_ignore=2");
  CHECK(strstr(t, "not resolvable from this GID's netdev xgbe4") && strlen(t) < DIAG_MAX,
        "ETIMEDOUT: resolution, in %zu: %s", strlen(t), t);
  CHECK(subnet && down && arp && subnet < down && down < arp,
        "ETIMEDOUT: the causes in order (subnet or route, the peer's port down, ARP filtered): %s",
        t);
  ib_diag_rtr(&dev, &peer, ENETUNREACH, t, sizeof(t));
  CHECK(leads_with(t,
                   "RTR failed with Network is unreachable (ENETUNREACH): this GID's netdev "
                   "xgbe4 is down",
                   100) &&
          strstr(t, "ip link set xgbe4 up") && !strstr(t, "rp_filter"),
        "ENETUNREACH: this GID's netdev is down: %s", t);
  ib_diag_rtr(&dev, &peer, ENODATA, t, sizeof(t));
  CHECK(strstr(t, "ENODATA") && strstr(t, "GID entry 3 of mlx5_4 port 1 was removed") &&
          strstr(t, "changed or was deleted"),
        "ENODATA: the GID entry was removed: %s", t);
  memset(peer.ib.gid, 0, 16);
  ib_diag_rtr(&dev, &peer, EINVAL, t, sizeof(t));
  CHECK(strstr(t, "remote GID is all zero"), "EINVAL with a zero remote GID: %s", t);
}

/* soft-RoCE completes the writes in flight with LOC_QP_OP_ERR when the
 * netdev under the port goes down; the port event explains it. */
static void wc_after_port_down(void) {
  char t[2400];
  setup();
  diag(IBV_WC_LOC_QP_OP_ERR, 0, "", t, sizeof(t));
  CHECK(strstr(t, "could not send") && !strstr(t, "went down during"), "without an event: %s", t);
  dev.port_down = 1;
  diag(IBV_WC_LOC_QP_OP_ERR, 1, "", t, sizeof(t));
  CHECK(strstr(t, "mlx5_4 port 1 went down during the transfer") && strstr(t, "xgbe4") &&
          !strstr(t, "first RDMA write after RTR"),
        "after a port error event: %s", t);
  dev.port_down = 0;
}

/* LOC_PROT_ERR: what to do depends on the buffer's memory. */
static void loc_prot_by_memory(void) {
  char t[2400];
  setup();
  diag_mem(IBV_WC_LOC_PROT_ERR, 0, WC_MEM_GPU, "", t, sizeof(t));
  CHECK(strstr(t, "(GPU memory)") && strstr(t, "ACS") && strstr(t, "disable ACS") &&
          strstr(t, "NCCL_NET_GDR_LEVEL=LOC (0)"),
        "GPU memory: PCIe ACS, disable it, confirm with NCCL_NET_GDR_LEVEL: %s", t);
  diag_mem(IBV_WC_LOC_PROT_ERR, 0, WC_MEM_HOST, "", t, sizeof(t));
  CHECK(strstr(t, "(host memory)") && strstr(t, "registration") && !strstr(t, "ACS"),
        "host memory: the registration, not ACS: %s", t);
  diag(IBV_WC_LOC_PROT_ERR, 0, "", t, sizeof(t));
  CHECK(strstr(t, wc_status_info(4)->cause) && strstr(t, wc_status_info(4)->fix),
        "unknown memory: explain's general words: %s", t);
}

/* RETRY_EXC_ERR on a link-local or forced GID repeats the GID index advice. */
static void retry_gid_index(void) {
  char t[3000];
  setup();
  memset(peer.ib.gid, 0, 16);
  peer.ib.gid[0] = 0xfe, peer.ib.gid[1] = 0x80, peer.ib.gid[15] = 1;
  diag(IBV_WC_RETRY_EXC_ERR, 1, "", t, sizeof(t));
  CHECK(leads_with(t, "GID 3 fe80::1 of mlx5_bond_0 on host-b is link-local", 100) &&
          strstr(t, "NCCL_IB_GID_INDEX=-1") && strstr(t, "IBV_WC_RETRY_EXC_ERR (12)") &&
          !strstr(t, "does not carry RoCE/IB traffic"),
        "link-local: the GID index advice first, not the generic causes: %s", t);
  setup();
  snprintf(peer.info[0].name, sizeof(peer.info[0].name), "NCCL_IB_GID_INDEX");
  snprintf(peer.info[0].value, sizeof(peer.info[0].value), "3");
  peer.ninfo = 1;
  diag(IBV_WC_RETRY_EXC_ERR, 1, "", t, sizeof(t));
  CHECK(strstr(t, "NCCL_IB_GID_INDEX is forced (unset here, 3 on host-b") &&
          strstr(t, "unset it on every node") && strlen(t) < DIAG_MAX,
        "a forced index: the GID index advice, in %zu: %s", strlen(t), t);
}

int main(void) {
  TAP_CASE("RETRY_EXC_ERR on the first write: the path, both GIDs, how to confirm", retry_first);
  TAP_CASE("RETRY_EXC_ERR later: the peer stopped answering", retry_later);
  TAP_CASE("RETRY_EXC_ERR while the peer's port is down, as it says", retry_peer_port);
  TAP_CASE("REM_ACCESS_ERR: rkey or registration", rem_access);
  TAP_CASE("WR_FLUSH_ERR names the first error", flush_names_first);
  TAP_CASE("RTR timeout: both GIDs, subnets, hosts and the plane fix", rtr_timeout);
  TAP_CASE("RTR: link-local GID and EINVAL", rtr_link_local_and_einval);
  TAP_CASE("RTR: ETIMEDOUT, ENETUNREACH, ENODATA as the kernel means them", rtr_kernel_errnos);
  TAP_CASE("completion error after a port went down: the port named", wc_after_port_down);
  TAP_CASE("LOC_PROT_ERR: ACS for GPU memory, the registration for host memory",
           loc_prot_by_memory);
  TAP_CASE("RETRY_EXC_ERR on a link-local or forced GID: NCCL_IB_GID_INDEX advice",
           retry_gid_index);
  return tap_done();
}
