/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP no-progress warning's cause: a path-MTU black hole only when the
 * header went through and the payload does not while the peer answers (on
 * the send side, with the socket retransmitting into an open window), and
 * its text; and the hello's interface MTU field that gives the peer's MTU,
 * absent from older peers. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "transport/hello.h"
#include "transport/tcp/tcp.h"

static struct tcp_stall partial(bool is_send) {
  struct tcp_stall s = {0};
  s.is_send = is_send, s.is_partial = true, s.live = LIVENESS_ANSWERS;
  snprintf(s.what, sizeof(s.what),
           "%s of message 1 (4194304 bytes) %s host-b (10.0.0.2<4242>, "
           "eth0)",
           is_send ? "send" : "receive", is_send ? "to" : "from");
  s.secs = 3, s.left = 4194304;
  s.has_info = true, s.pmtu = 9000, s.mss = 8948;
  snprintf(s.sock_name, sizeof(s.sock_name), "data socket 0");
  if (is_send) s.unacked = 7, s.retransmits = 4, s.total_retrans = 4;
  s.local_mtu = s.peer_mtu = 9000;
  snprintf(s.local_if, sizeof(s.local_if), "eth0");
  s.peer_host = "host-b";
  snprintf(s.peer_ip, sizeof(s.peer_ip), "10.0.0.2");
  return s;
}

static void selection(void) {
  struct tcp_stall s = partial(false);
  CHECK(tcp_stall_is_mtu(&s), "a receive with its header, peer answering: black hole");
  s.is_partial = false;
  CHECK(!tcp_stall_is_mtu(&s), "nothing of the message arrived: the peer is not there yet");
  s = partial(false), s.live = LIVENESS_SILENT;
  CHECK(!tcp_stall_is_mtu(&s), "a silent peer: not the MTU");
  s = partial(false), s.live = LIVENESS_UNCHECKED;
  CHECK(!tcp_stall_is_mtu(&s), "an unchecked peer: not the MTU");
  s = partial(true);
  CHECK(tcp_stall_is_mtu(&s), "a send retransmitting unacknowledged segments: black hole");
  s.probes = 2;
  CHECK(!tcp_stall_is_mtu(&s), "the receiver's window closed: it does not read, not the MTU");
  s = partial(true), s.retransmits = 0;
  CHECK(!tcp_stall_is_mtu(&s), "no retransmission: not the MTU");
  s = partial(true), s.unacked = 0;
  CHECK(!tcp_stall_is_mtu(&s), "everything acknowledged: not the MTU");
  s = partial(true), s.has_info = false;
  CHECK(!tcp_stall_is_mtu(&s), "no TCP_INFO: no claim");
}

static void text_same(void) {
  struct tcp_stall s = partial(true);
  char buf[1000];
  tcp_stall_mtu_text(&s, buf, sizeof(buf));
  tap_diag("%s", buf);
  const char *first = "path-MTU black hole suspected: send of message 1 ";
  CHECK(!strncmp(buf, first, strlen(first)), "cause first");
  CHECK(strstr(buf, "MTU 9000 on eth0 here, 9000 on host-b;"), "both MTUs");
  CHECK(strstr(buf, "7 segments of 8948 bytes unacknowledged, 4 retransmissions, path MTU as "
                    "the kernel sees it 9000"),
        "the socket's evidence");
  CHECK(strstr(buf, "Fix: make the MTU equal on every hop") &&
          strstr(buf, "ping -M do -s 8972 10.0.0.2"),
        "the fix and its check");
  CHECK(strlen(buf) < 480, "short: %zu", strlen(buf));
}

static void text_differ(void) {
  struct tcp_stall s = partial(false);
  s.peer_mtu = 1500;
  char buf[1000];
  tcp_stall_mtu_text(&s, buf, sizeof(buf));
  tap_diag("%s", buf);
  const char *first = "the two ends' MTUs differ (9000 on eth0 here, 1500 on host-b), ";
  CHECK(!strncmp(buf, first, strlen(first)), "the difference first");
  CHECK(strstr(buf, "equal on both hosts and every hop"), "the fix names both hosts");
  CHECK(!strstr(buf, "retransmissions"), "the receiver has no retransmissions to tell");
}

static void text_unknown(void) {
  struct tcp_stall s = partial(false);
  s.peer_mtu = 0, s.is_ipv6 = true;
  snprintf(s.peer_ip, sizeof(s.peer_ip), "fd00::2");
  char buf[1000];
  tcp_stall_mtu_text(&s, buf, sizeof(buf));
  CHECK(strstr(buf, "MTU 9000 on eth0 here, unknown on host-b (its plugin does not say)"),
        "an older peer's MTU is unknown: %s", buf);
  CHECK(strstr(buf, "ping -M do -s 8952 fd00::2"), "IPv6 headers are 48 bytes: %s", buf);
}

static int round_trip(const struct hello *m, struct hello *back, size_t *len) {
  static uint8_t out[HELLO_HDR_LEN + HELLO_MAX_BODY];
  char why[200] = "";
  int kind = 0;
  uint32_t body = 0;
  if (hello_encode(m, out, sizeof(out), len)) return -1;
  if (hello_decode_header(out, &kind, &body, why, sizeof(why))) return -2;
  return hello_decode_body(out + HELLO_HDR_LEN, body, back, why, sizeof(why)) ? -3 : 0;
}

static void hello_mtu(void) {
  struct hello m, back;
  memset(&m, 0, sizeof(m));
  m.kind = HELLO_CONNECT, m.nonce = 7;
  strcpy(m.plugin_version, "0.2.0"), strcpy(m.host, "host-a");
  size_t len, len_with;
  CHECK(round_trip(&m, &back, &len) == 0 && back.if_mtu == 0, "no field: unknown (0)");
  m.if_mtu = 9000;
  CHECK(round_trip(&m, &back, &len_with) == 0 && back.if_mtu == 9000, "9000 carried: %u",
        back.if_mtu);
  CHECK(len_with == len + 8, "one optional TLV of 8 bytes (%zu vs %zu): older peers skip it",
        len_with, len);
}

int main(void) {
  TAP_CASE("the stall's cause: black hole only for a partial message the peer is inside",
           selection);
  TAP_CASE("black hole text: cause first, both MTUs, the socket, the fix and ping", text_same);
  TAP_CASE("black hole text: MTUs that differ between the ends are said first", text_differ);
  TAP_CASE("black hole text: an older peer's MTU unknown; IPv6 ping size", text_unknown);
  TAP_CASE("the hello's interface MTU: carried, and unknown when absent", hello_mtu);
  return tap_done();
}
