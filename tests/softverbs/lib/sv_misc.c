/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: strings and the verbs softverbs declines. */
#include "sv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Status names and the texts libibverbs prints for them. */
static const struct {
  const char *name, *text;
} wc_status[] = {
  [IBV_WC_SUCCESS] = {"SUCCESS", "success"},
  [IBV_WC_LOC_LEN_ERR] = {"LOC_LEN_ERR", "local length error"},
  [IBV_WC_LOC_QP_OP_ERR] = {"LOC_QP_OP_ERR", "local QP operation error"},
  [IBV_WC_LOC_EEC_OP_ERR] = {"LOC_EEC_OP_ERR", "local EE context operation error"},
  [IBV_WC_LOC_PROT_ERR] = {"LOC_PROT_ERR", "local protection error"},
  [IBV_WC_WR_FLUSH_ERR] = {"WR_FLUSH_ERR", "Work Request Flushed Error"},
  [IBV_WC_MW_BIND_ERR] = {"MW_BIND_ERR", "memory management operation error"},
  [IBV_WC_BAD_RESP_ERR] = {"BAD_RESP_ERR", "bad response error"},
  [IBV_WC_LOC_ACCESS_ERR] = {"LOC_ACCESS_ERR", "local access error"},
  [IBV_WC_REM_INV_REQ_ERR] = {"REM_INV_REQ_ERR", "remote invalid request error"},
  [IBV_WC_REM_ACCESS_ERR] = {"REM_ACCESS_ERR", "remote access error"},
  [IBV_WC_REM_OP_ERR] = {"REM_OP_ERR", "remote operation error"},
  [IBV_WC_RETRY_EXC_ERR] = {"RETRY_EXC_ERR", "transport retry counter exceeded"},
  [IBV_WC_RNR_RETRY_EXC_ERR] = {"RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
  [IBV_WC_LOC_RDD_VIOL_ERR] = {"LOC_RDD_VIOL_ERR", "local RDD violation error"},
  [IBV_WC_REM_INV_RD_REQ_ERR] = {"REM_INV_RD_REQ_ERR", "remote invalid RD request"},
  [IBV_WC_REM_ABORT_ERR] = {"REM_ABORT_ERR", "aborted error"},
  [IBV_WC_INV_EECN_ERR] = {"INV_EECN_ERR", "invalid EE context number"},
  [IBV_WC_INV_EEC_STATE_ERR] = {"INV_EEC_STATE_ERR", "invalid EE context state"},
  [IBV_WC_FATAL_ERR] = {"FATAL_ERR", "fatal error"},
  [IBV_WC_RESP_TIMEOUT_ERR] = {"RESP_TIMEOUT_ERR", "response timeout error"},
  [IBV_WC_GENERAL_ERR] = {"GENERAL_ERR", "general error"},
  [IBV_WC_TM_ERR] = {"TM_ERR", "TM error"},
  [IBV_WC_TM_RNDV_INCOMPLETE] = {"TM_RNDV_INCOMPLETE", "TM software rendezvous"},
};
enum { N_WC_STATUS = sizeof wc_status / sizeof wc_status[0] };

SV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status) {
  return (unsigned)status < N_WC_STATUS ? wc_status[status].text : "unknown";
}

/* "RETRY_EXC_ERR", "IBV_WC_RETRY_EXC_ERR" or "12"; -1 when none. */
int sv_wc_status_parse(const char *s) {
  if (!strncasecmp(s, "IBV_WC_", 7)) s += 7;
  char *end;
  long v = strtol(s, &end, 10);
  if (end != s && !*end) return v >= 0 && v < N_WC_STATUS ? (int)v : -1;
  for (int i = 0; i < N_WC_STATUS; i++)
    if (!strcasecmp(s, wc_status[i].name)) return i;
  return -1;
}

/* The vendor syndromes mlx5 reports for these statuses, as NCCL users quote
 * them; other statuses carry 0. */
uint32_t sv_vendor_err(enum ibv_wc_status st) {
  switch (st) {
  case IBV_WC_RETRY_EXC_ERR: return 0x81;
  case IBV_WC_WR_FLUSH_ERR: return 0xf9;
  case IBV_WC_LOC_PROT_ERR: return 0x51;
  default: return 0;
  }
}

SV_EXPORT const char *ibv_event_type_str(enum ibv_event_type event) {
  static const char *const str[] = {
    [IBV_EVENT_CQ_ERR] = "CQ error",
    [IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
    [IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
    [IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
    [IBV_EVENT_COMM_EST] = "communication established",
    [IBV_EVENT_SQ_DRAINED] = "send queue drained",
    [IBV_EVENT_PATH_MIG] = "path migrated",
    [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
    [IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
    [IBV_EVENT_PORT_ACTIVE] = "port active",
    [IBV_EVENT_PORT_ERR] = "port error",
    [IBV_EVENT_LID_CHANGE] = "LID change",
    [IBV_EVENT_PKEY_CHANGE] = "P_Key change",
    [IBV_EVENT_SM_CHANGE] = "SM change",
    [IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
    [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
    [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
    [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
    [IBV_EVENT_GID_CHANGE] = "GID table change",
    [IBV_EVENT_WQ_FATAL] = "WQ fatal",
  };
  return (unsigned)event < sizeof str / sizeof str[0] ? str[event] : "unknown";
}

SV_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type) {
  static const char *const str[] = {"InfiniBand channel adapter",
                                    "InfiniBand switch",
                                    "InfiniBand router",
                                    "iWARP NIC",
                                    "usNIC",
                                    "usNIC UDP",
                                    "unspecified"};
  int i = (int)node_type - 1;
  return i >= 0 && i < (int)(sizeof str / sizeof str[0]) ? str[i] : "unknown";
}

SV_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state) {
  static const char *const str[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                    "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
  return (unsigned)port_state < sizeof str / sizeof str[0] ? str[port_state] : "unknown";
}

/* Only RC QPs exist, and they take their path from modify_qp. */
SV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr) {
  (void)pd;
  (void)attr;
  errno = EOPNOTSUPP;
  return NULL;
}

SV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah) {
  (void)ah;
  return EINVAL;
}

SV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe) {
  (void)cq;
  (void)cqe;
  return EOPNOTSUPP;
}
