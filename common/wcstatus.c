/* SPDX-License-Identifier: Apache-2.0 */
#include "common/wcstatus.h"

#include <stddef.h>
#include <string.h>

/* Causes and fixes as they apply to NCCL's RC traffic (RDMA writes and
 * write-with-immediate, receiver-driven, rnr_retry 7). */
static const struct wc_status_info table[] = {
  {1, "IBV_WC_LOC_LEN_ERR", "local length error",
   "a message larger than the posted receive or the path MTU allows",
   "use the same NCCL and net plugin version on every node", false},
  {2, "IBV_WC_LOC_QP_OP_ERR", "local QP operation error",
   "the local queue pair could not send it: its port or netdev went down, or no route leads to the peer from the GID's netdev (soft-RoCE reports both this way); on other NICs, a malformed work request or a QP state the device did not expect",
   "check the port and its netdev (ibstat, ip link) and the route to the peer's GID from that netdev; then the driver and firmware on this host (dmesg, ibv_devinfo)",
   false},
  {4, "IBV_WC_LOC_PROT_ERR", "local protection error",
   "the NIC could not read or write a registered buffer; with GPU buffers PCIe ACS between the GPU and the NIC blocks the peer-to-peer path (or an IOMMU translates it away)",
   "disable ACS on the PCIe switches between GPU and NIC (vendor documentation, setpci or BIOS), or stage through host memory with NCCL_NET_GDR_LEVEL=LOC",
   false, NULL, NULL,
   "the NIC could not reach the GPU buffer it was given: PCIe ACS on the switches between the GPU and the NIC redirects peer-to-peer traffic to the root complex, where it is refused (or an IOMMU translates it away)",
   "disable ACS on those PCIe switches (vendor documentation, setpci or BIOS; iommu=pt); confirm with NCCL_NET_GDR_LEVEL=LOC (0), which stages GPU buffers through host memory: if the error goes, ACS is the cause",
   "the NIC could not reach a host buffer through its registration: the memory was freed, unmapped or remapped after it was registered (a buffer released while NCCL still used it), or registered for other rights",
   "keep every buffer allocated and registered until its request completes; check for a buffer freed or reallocated by the application while in flight"},
  {5, "IBV_WC_WR_FLUSH_ERR", "work request flushed",
   "the queue pair had already entered the error state: another completion error or an async event came first",
   "look for the first completion error or async event on this host or its peer: that one names the cause",
   true},
  {6, "IBV_WC_MW_BIND_ERR", "memory window bind error",
   "a memory window operation failed (NCCL does not use memory windows)",
   "use the same NCCL and net plugin on every node", false},
  {7, "IBV_WC_BAD_RESP_ERR", "bad response",
   "the peer answered with an unexpected transport opcode",
   "check both NICs' firmware and the fabric (ibdiagnet, switch counters)", false},
  {8, "IBV_WC_LOC_ACCESS_ERR", "local access error",
   "a buffer was accessed without the rights its registration grants",
   "use the same NCCL and net plugin on every node", false},
  {9, "IBV_WC_REM_INV_REQ_ERR", "remote invalid request",
   "the peer rejected the request as invalid: a message longer than its receive or the path MTU, or mismatched MTUs between the two ports",
   "set the same MTU on every port and use the same NCCL everywhere", false},
  {10, "IBV_WC_REM_ACCESS_ERR", "remote access error",
   "the peer refused the RDMA write: the address or rkey it had advertised was no longer valid (a buffer deregistered or freed while in use, or two sides that disagree on the protocol)",
   "use the same NCCL and net plugin on every node; look for a peer that aborted or freed its buffers first",
   false},
  {11, "IBV_WC_REM_OP_ERR", "remote operation error",
   "the peer could not complete the operation (its queue pair failed)",
   "look at the peer's log for its first error", false},
  {12, "IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded",
   "packets to the peer were never acknowledged within NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT: the peer died or its port went down, the path between the two GIDs does not carry RDMA traffic, or the fabric drops packets",
   "check the peer's log and port (ibstat, dmesg), then the path with ib_write_bw between the two GIDs; raise NCCL_IB_TIMEOUT only when the fabric is healthy but congested",
   false,
   "the first RDMA write after RTR was never acknowledged: the path between the two GIDs does not carry RoCE/IB traffic (routing, a GID on the wrong subnet, the peer's rp_filter dropping packets from this subnet, PFC/ECN or a switch ACL dropping it)",
   "confirm the path with ib_write_bw between the two GIDs, then fix the routing or choose GIDs and ports of one plane",
   NULL, NULL, NULL, NULL},
  {13, "IBV_WC_RNR_RETRY_EXC_ERR", "receiver not ready retry exceeded",
   "the peer had no receive posted for too long; NCCL retries RNR without limit, so the peer runs a different NCCL or net plugin that sets it up otherwise",
   "use the same NCCL and net plugin on every node", false},
  {14, "IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation",
   "a reliable-datagram domain violation (not used by NCCL)", "use the same NCCL everywhere",
   false},
  {15, "IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request",
   "the peer rejected a reliable-datagram request (not used by NCCL)",
   "use the same NCCL everywhere", false},
  {16, "IBV_WC_REM_ABORT_ERR", "remote aborted", "the peer aborted the operation",
   "look at the peer's log for its first error", false},
  {17, "IBV_WC_INV_EECN_ERR", "invalid EE context number",
   "an end-to-end context error (not used by NCCL)", "use the same NCCL everywhere", false},
  {18, "IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state",
   "an end-to-end context error (not used by NCCL)", "use the same NCCL everywhere", false},
  {19, "IBV_WC_FATAL_ERR", "fatal error", "the device reported a fatal error",
   "check dmesg and the device's health (mlxlink, firmware); reset the device", false},
  {20, "IBV_WC_RESP_TIMEOUT_ERR", "response timeout", "the peer's response did not arrive in time",
   "check the peer and the path between the two ports", false},
  {21, "IBV_WC_GENERAL_ERR", "general error", "the provider reported an error it does not classify",
   "check dmesg and the device's health on this host", false},
};

const struct wc_status_info *wc_status_info(int status) {
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
    if (table[i].status == status) return &table[i];
  return NULL;
}

const struct wc_status_info *wc_status_advice(int status, bool is_first, enum wc_memory mem,
                                              const char **cause, const char **fix) {
  const struct wc_status_info *in = wc_status_info(status);
  *cause = *fix = NULL;
  if (!in) return NULL;
  *cause = in->cause;
  *fix = in->fix;
  if (is_first && in->cause_first) *cause = in->cause_first, *fix = in->fix_first;
  else if (mem == WC_MEM_GPU && in->cause_gpu) *cause = in->cause_gpu, *fix = in->fix_gpu;
  else if (mem == WC_MEM_HOST && in->cause_host) *cause = in->cause_host, *fix = in->fix_host;
  return in;
}

int wc_status_from_name(const char *name) {
  if (!name) return -1;
  if (!strncmp(name, "IBV_WC_", 7)) name += 7;
  if (!strcmp(name, "SUCCESS")) return 0;
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
    if (!strcmp(table[i].name + 7, name)) return table[i].status;
  return -1;
}
