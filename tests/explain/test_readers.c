/* SPDX-License-Identifier: Apache-2.0 */
/* Table tests of the readers of NCCL's words: line prefixes of 2.12 to 2.30
 * and job launchers, errno texts, GIDs in both notations, and the failure
 * lines the rules parse (modify QP, completions, connects, versions,
 * settings). */
#include <errno.h>
#include <string.h>

#include "common/wcstatus.h"
#include "tap.h"
#include "tests/explain/test_explain.h"
#include "tools/explain/correlate.h"
#include "tools/explain/rules.h"

struct line_case {
  const char *line, *host;
  long pid, tid;
  int dev;
  const char *src;
  int srcline;
  enum rec_level level;
  bool is_diag;
  const char *text; /* the message starts with this */
};

static const struct line_case lines[] = {
  {"node-a:120858:120906 [6] misc/ibvwrap.cc:301 NCCL WARN Call to ibv_modify_qp failed", "node-a",
   120858, 120906, 6, "misc/ibvwrap.cc", 301, REC_WARN, false, "Call to ibv_modify_qp"},
  {"[2025-07-14 10:13:02] node-a:1:2 [0] proxy.cc:1523 NCCL WARN [Proxy Service 6] Failed",
   "node-a", 1, 2, 0, "proxy.cc", 1523, REC_WARN, false, "[Proxy Service 6]"},
  {"h:9:9 [0] misc/ibvwrap.cc:376 (wrap_ibv_modify_qp) NCCL WARN Call to x", "h", 9, 9, 0,
   "misc/ibvwrap.cc", 376, REC_WARN, false, "Call to x"},
  {"gpu-c07:40211:40211 [0] NCCL INFO NCCL version 2.24.3+cuda12.4", "gpu-c07", 40211, 40211, 0, "",
   0, REC_INFO, false, "NCCL version 2.24.3"},
  {"[default3]:node-c:4401:4401 [3] NCCL INFO Using network Socket", "node-c", 4401, 4401, 3, "", 0,
   REC_INFO, false, "Using network Socket"},
  {"12: n12.cluster.local:7:8 [1] NCCL INFO NET/IB : No device found.", "n12.cluster.local", 7, 8,
   1, "", 0, REC_INFO, false, "NET/IB : No device found."},
  {"h:1:2 [0] 12.345678 ncclIbConnect:1021 NCCL TRACE Got completion", "h", 1, 2, 0,
   "ncclIbConnect", 1021, REC_TRACE, false, "Got completion"},
  {"h:1:2 NCCL CALL ncclAllReduce(0x1)", "h", 1, 2, -1, "", 0, REC_TRACE, false, "ncclAllReduce"},
  {"gpu-host:51234:51234 [0] NET/diag WARN no usable network device", "gpu-host", 51234, 51234, 0,
   "", 0, REC_WARN, true, "no usable network device"},
  {"host:3:4 NET/diag INFO using [0]lo:127.0.0.1/TCP", "host", 3, 4, -1, "", 0, REC_INFO, true,
   "using [0]lo"},
  {"h:5:6 [2] transport/ib/ib_setup.c:174 NCCL WARN NET/diag RDMA path from x", "h", 5, 6, 2,
   "transport/ib/ib_setup.c", 174, REC_WARN, true, "RDMA path from x"},
  {"NCCL version 2.19.3+cuda12.3", "", 0, 0, -1, "", 0, REC_TEXT, false, "NCCL version 2.19.3"},
  {"[rank0]:[E1107 10:22:45.123456589 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught", "", 0, 0,
   -1, "", 0, REC_TEXT, false, "[rank0]:[E1107"},
  {"  12:00:00 host:1:2 [0] NCCL INFO x", "host", 1, 2, 0, "", 0, REC_INFO, false, "x"},
  /* no host:pid:tid: still an NCCL line, with no host */
  {"a:b:c [0] NCCL INFO not a prefix", "", 0, 0, -1, "", 0, REC_INFO, false, "not a prefix"},
  {"h:1:2 [x] NCCL INFO bad device", "", 0, 0, -1, "", 0, REC_INFO, false, "bad device"},
  {"[rank0]: misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to x failed", "", 0, 0, -1,
   "misc/socket.cc", 484, REC_WARN, false, "socketStartConnect"},
  {"0: NCCL WARN NET/Plugin : Plugin load returned 2", "", 0, 0, -1, "", 0, REC_WARN, false,
   "NET/Plugin"},
  {"[1,0]<stderr>:include/shm.h:48 NCCL WARN Error while creating shared memory segment", "", 0, 0,
   -1, "include/shm.h", 48, REC_WARN, false, "Error while creating"},
};

static void parse_lines(void) {
  for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
    const struct line_case *c = &lines[i];
    char buf[512];
    struct rec r;
    snprintf(buf, sizeof(buf), "%s", c->line);
    explain_parse_line(buf, &r);
    CHECK(!strcmp(r.host, c->host), "line %zu: host '%s', want '%s'", i, r.host, c->host);
    CHECK(r.pid == c->pid && r.tid == c->tid, "line %zu: pid %ld tid %ld", i, r.pid, r.tid);
    CHECK(r.dev == c->dev, "line %zu: dev %d, want %d", i, r.dev, c->dev);
    CHECK(!strcmp(r.src, c->src) && r.srcline == c->srcline, "line %zu: src %s:%d", i, r.src,
          r.srcline);
    CHECK(r.level == c->level && r.is_diag == c->is_diag, "line %zu: level %d diag %d", i, r.level,
          r.is_diag);
    CHECK(!strncmp(r.text, c->text, strlen(c->text)), "line %zu: text '%s'", i, r.text);
  }
}

static void facts(void) {
  CHECK(text_errno("Connection timed out, on dev") == ETIMEDOUT, "timed out");
  CHECK(text_errno("Too many open files in system") == ENFILE, "the longer text wins");
  CHECK(text_errno("Too many open files") == EMFILE, "EMFILE");
  CHECK(text_errno("ENETUNREACH") == ENETUNREACH && text_errno("ENETUNREACHX") == 0, "names");
  CHECK(text_errno("Something else") == 0, "unknown text");
  struct log_gid a, b;
  char t[64];
  CHECK(log_gid_parse_nccl("(0/504010AFFFF0000)", &a) && log_gid_is_v4(&a), "NCCL hex form");
  log_gid_text(&a, t, sizeof(t));
  CHECK(!strcmp(t, "::ffff:10.1.4.5"), "hex form decodes to %s", t);
  CHECK(log_gid_parse_nccl("(80FE/7A1B03FEFF9F59BA)", &b) && log_gid_is_link_local(&b), "fe80");
  log_gid_text(&b, t, sizeof(t));
  CHECK(!strcmp(t, "fe80::ba59:9fff:fe03:1b7a"), "link-local decodes to %s", t);
  CHECK(!log_gid_parse_nccl("(0/11112222333344445)", &b), "17 hex digits are refused");
  CHECK(log_gid_parse("::ffff:10.1.4.77,", &b) && log_gid_same_subnet(&a, &b), "same /24");
  log_gid_subnet(&b, t, sizeof(t));
  CHECK(!strcmp(t, "10.1.4.0/24"), "subnet %s", t);
  CHECK(log_gid_parse("::ffff:10.1.5.5", &b) && !log_gid_same_subnet(&a, &b), "other /24");
  CHECK(!log_gid_parse("N/A", &b) && !log_gid_parse("index", &b), "not a GID");
  CHECK(log_gid_after("local GID index 3, local GID ::ffff:1.2.3.4, x", "local GID ", &b) &&
          log_gid_is_v4(&b),
        "the label's second occurrence holds the GID");
  text_ip_of("10.0.0.2<4242>", t, sizeof(t));
  CHECK(!strcmp(t, "10.0.0.2"), "ip of %s", t);
  text_ip_of("fe80::1%eth0<4242>", t, sizeof(t));
  CHECK(!strcmp(t, "fe80::1"), "ip of %s", t);
  text_clean("a\x1b[31mb\xff\xc3\xa9", t, sizeof(t));
  CHECK(!strcmp(t, "a?[31mb?\xc3\xa9"), "clean: %s", t);
}

static void modify_qp(void) {
  struct mqp m;
  CHECK(mqp_parse("Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_4:1, "
                  "curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.1.4.5, "
                  "remote GID ::ffff:10.0.0.7, retrying 1/35 after 100 msec of sleep",
                  &m),
        "2.24+ retry");
  CHECK(m.err == ETIMEDOUT && m.is_retry && !strcmp(m.dev, "mlx5_4") && m.port == 1, "fields");
  CHECK(!strcmp(m.cur, "INIT") && !strcmp(m.next, "RTR") && m.gid_index == 3, "states, index");
  CHECK(m.has_lgid && m.has_rgid && !log_gid_same_subnet(&m.lgid, &m.rgid), "GIDs");
  CHECK(mqp_parse("Call to ibv_modify_qp failed with error Connection timed out errno 110", &m) &&
          m.err == ETIMEDOUT && !m.dev[0] && !m.has_lgid && !m.cur[0],
        "2.19-2.23");
  CHECK(mqp_parse("Call to ibv_modify_qp failed with error Invalid argument", &m) &&
          m.err == EINVAL,
        "2.18 and older");
  CHECK(mqp_parse("Call to ibv_modify_qp failed with 22 Invalid argument, on dev mlx5_0:1, curr "
                  "state INIT, next state RTR, local GID index -1, local GID N/A, remote GID N/A",
                  &m) &&
          !m.has_lgid && !m.has_rgid && m.gid_index == -1,
        "N/A GIDs");
  CHECK(!mqp_parse("Call to ibv_create_qp failed with error Cannot allocate memory", &m), "other");
}

static void completions(void) {
  static const struct {
    const char *text;
    int status;
    long vendor;
    const char *peer, *hca;
    bool has_gids;
  } cases[] = {
    {"NET/IB : Got completion from peer 192.168.1.21<43127> with error 13, opcode 1, len 0, vendor "
     "err 136",
     13, 136, "192.168.1.21<43127>", "", false},
    {"NET/IB : Got completion from peer 10.0.0.12<5> with error 12, opcode 0, len 0, vendor err 129 "
     "(Send) localGid fe80::1 remoteGid fe80::2",
     12, 129, "10.0.0.12<5>", "", true},
    {"NET/IB : Got completion from peer 10.12.0.8<40122> with status=4 opcode=128 len=0 vendor err "
     "81 (Recv) localGid ::ffff:10.12.3.7 remoteGids::ffff:10.12.3.8 hca mlx5_3",
     4, 81, "10.12.0.8<40122>", "mlx5_3", true},
    {"NET/IB: Got completion from peer 10.60.1.2<45512> with status=IBV_WC_RETRY_EXC_ERR(12) "
     "opcode=IBV_WC_RDMA_WRITE(0) reqSize=1048576 vendor_err=129 req_type=Send hca mlx5_0",
     12, 129, "10.60.1.2<45512>", "mlx5_0", false},
    {"NET/IB: Got completion from peer 1.2.3.4<5> with status=IBV_WC_WR_FLUSH_ERR(5) "
     "opcode=IBV_WC_RDMA_WRITE(0) vendor_err=249  localGid ::ffff:1.1.1.1 remoteGids::ffff:1.1.1.2 "
     "hca mlx5_4",
     5, 249, "1.2.3.4<5>", "mlx5_4", true},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct wcerr w;
    bool ok = wcerr_parse(cases[i].text, &w);
    CHECK(ok && w.status == cases[i].status && w.vendor == cases[i].vendor,
          "case %zu: status %d "
          "vendor %ld",
          i, w.status, w.vendor);
    CHECK(!strcmp(w.peer, cases[i].peer) && !strcmp(w.hca, cases[i].hca), "case %zu: %s %s", i,
          w.peer, w.hca);
    CHECK(w.has_lgid == cases[i].has_gids && w.has_rgid == cases[i].has_gids, "case %zu: GIDs", i);
  }
  CHECK(wc_status_from_name("IBV_WC_RETRY_EXC_ERR") == 12 &&
          wc_status_from_name("LOC_PROT_ERR") == 4,
        "status names");
  CHECK(wc_status_info(5)->is_secondary && !wc_status_info(12)->is_secondary, "flush is secondary");
  CHECK(!wc_status_info(99) && wc_status_from_name("NOPE") == -1, "unknown status");
}

static void connects(void) {
  static const struct {
    const char *text;
    int err;
    const char *addr;
    bool is_retry;
  } cases[] = {
    {"socketStartConnect: Connect to 10.37.12.78<46417> failed : Software caused connection abort",
     ECONNABORTED, "10.37.12.78<46417>", false},
    {"ncclOsSocketStartConnect: connect to 10.0.0.2<41234> returned Connection refused, retrying "
     "(1/34) after sleep for 100 msec",
     ECONNREFUSED, "10.0.0.2<41234>", true},
    {"socketPollConnect: connect to 10.0.0.2<1> returned Connection timed out, exceeded error retry "
     "count after 34 attempts",
     ETIMEDOUT, "10.0.0.2<1>", false},
    {"socketStartConnect: connect returned No route to host, exceeded error retry count (35)",
     EHOSTUNREACH, "", false},
    {"Call to connect returned Connection refused, retrying", ECONNREFUSED, "", true},
    {"socketPollConnect: Connect to 10.1.1.1<9> returned 111(Connection refused) errno "
     "115(Operation now in progress)",
     ECONNREFUSED, "10.1.1.1<9>", false},
    {"socketStartConnect: exceeded timeouts (3)", ETIMEDOUT, "", false},
    {"Net : Connect to fe80::1%eth0<42> failed : Network is unreachable", ENETUNREACH,
     "fe80::1%eth0<42>", false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct connfail c;
    bool ok = connfail_parse(cases[i].text, &c);
    CHECK(ok && c.err == cases[i].err, "case %zu: err %d, want %d", i, c.err, cases[i].err);
    CHECK(!strcmp(c.addr, cases[i].addr) && c.is_retry == cases[i].is_retry, "case %zu: %s %d", i,
          c.addr, c.is_retry);
  }
  struct connfail c;
  CHECK(!connfail_parse("Connected to proxy localRank 0 -> connection 0x1", &c), "not a failure");
}

static void host_lines(void) {
  char v[48], full[48], k[48], val[160], iface[32], ip[64];
  CHECK(corr_parse_version("NCCL version 2.19.3+cuda12.3", v, sizeof(v), full, sizeof(full)) &&
          !strcmp(v, "2.19.3") && !strcmp(full, "2.19.3+cuda12.3"),
        "INFO version %s %s", v, full);
  CHECK(corr_parse_version("x, unhandled system error (run with NCCL_DEBUG=INFO for details), "
                           "NCCL version 2.18.1",
                           v, sizeof(v), full, sizeof(full)) &&
          !strcmp(v, "2.18.1"),
        "PyTorch's error tail");
  CHECK(
    !corr_parse_version("compiled with NCCL version 2.30.1, but", v, sizeof(v), full, sizeof(full)),
    "not a sentence that mentions a version");
  CHECK(
    corr_parse_env("NCCL_IB_GID_INDEX set by environment to 3.", k, sizeof(k), val, sizeof(val)) &&
      !strcmp(k, "NCCL_IB_GID_INDEX") && !strcmp(val, "3"),
    "numeric setting %s=%s", k, val);
  CHECK(
    corr_parse_env("NCCL_IB_GID_INDEX set by environment to -1.", k, sizeof(k), val, sizeof(val)) &&
      !strcmp(val, "-1"),
    "negative %s", val);
  CHECK(corr_parse_env("NCCL_SOCKET_IFNAME set to =eth0.", k, sizeof(k), val, sizeof(val)) &&
          !strcmp(val, "=eth0."),
        "text setting keeps its dot: %s", val);
  CHECK(!corr_parse_env("NCCL_PROTO is Simple", k, sizeof(k), val, sizeof(val)), "not a setting");
  CHECK(corr_parse_ifaddr("eth0:10.0.0.1<0>", iface, sizeof(iface), ip, sizeof(ip)) &&
          !strcmp(iface, "eth0") && !strcmp(ip, "10.0.0.1"),
        "ifaddr");
  CHECK(corr_parse_ifaddr("ib0:fe80::1%ib0<0>", iface, sizeof(iface), ip, sizeof(ip)) &&
          !strcmp(iface, "ib0") && !strcmp(ip, "fe80::1"),
        "IPv6 ifaddr %s %s", iface, ip);
  CHECK(!corr_parse_ifaddr("mlx5_0:1", iface, sizeof(iface), ip, sizeof(ip)), "a device:port");
  CHECK(corr_mtu_bytes(5) == 4096 && corr_mtu_bytes(3) == 1024 && corr_mtu_bytes(0) == 0, "mtu");
}

void readers_cases(void) {
  TAP_CASE("log line prefixes of NCCL 2.12-2.30, launchers and the plugin", parse_lines);
  TAP_CASE("errno texts, GIDs in text and NCCL's hex form, addresses, cleaning", facts);
  TAP_CASE("ibv_modify_qp failures, every format", modify_qp);
  TAP_CASE("completions with error, every format, and the status table", completions);
  TAP_CASE("connect failures, every format", connects);
  TAP_CASE("versions, settings, interface addresses, MTUs", host_lines);
}
