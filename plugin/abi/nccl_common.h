/* SPDX-License-Identifier: Apache-2.0 */
/* Types and constants shared by every version of the NCCL net plugin ABI.
 * Written from NCCL's ext-net ABI (its documented structs and constants); the values
 * are ABI, so each one is pinned by a static assert where it has a size. */
#ifndef DIAG_ABI_NCCL_COMMON_H
#define DIAG_ABI_NCCL_COMMON_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7, /* core only: never returned by the plugin */
} ncclResult_t;

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;

typedef enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_P2P = 0x4,
  NCCL_SHM = 0x8,
  NCCL_NET = 0x10,
  NCCL_GRAPH = 0x20,
  NCCL_TUNING = 0x40,
  NCCL_ENV = 0x80,
  NCCL_ALLOC = 0x100,
  NCCL_CALL = 0x200,
  NCCL_PROXY = 0x400,
  NCCL_NVLS = 0x800,
  NCCL_BOOTSTRAP = 0x1000,
  NCCL_REG = 0x2000,
  NCCL_PROFILE = 0x4000,
  NCCL_RAS = 0x8000,
  NCCL_ALL = ~0,
} ncclDebugLogSubSys;

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
                                  int line, const char *fmt, ...);

/* v10+: profiler callback; network events are reported through it (plugin/abi/net_profiler.h). */
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle,
                                               int64_t pluginId, void *extData);

#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4
#define NCCL_NET_MAX_REQUESTS 32
/* What NCCL required in flight per comm before v7 (2.12-2.18); we still take 32. */
#define NCCL_NET_MAX_REQUESTS_V6 8
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
#define NCCL_NET_MAX_DEVS_PER_NIC 4
#define NCCL_MAX_NET_SIZE_BYTES (1ULL << 40)
/* Tables before v9 have no maxP2pBytes/maxCollBytes: NCCL (2.24 on) assumes
 * these for them and refuses larger isend/irecv sizes in its adapters. */
#define MAX_NET_SIZE (1ULL << 30)
#define MAX_COLLNET_SIZE (1ULL << 29)
#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1)

typedef enum {
  NCCL_NET_DEVICE_HOST = 0,
  NCCL_NET_DEVICE_UNPACK = 1,
} ncclNetDeviceType;

#define NCCL_NET_DEVICE_INVALID_VERSION 0x0

/* Identical from v7 to v12; only used for device offload, which we never do. */
typedef struct {
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  void *handle;
  size_t size;
  int needsProxyProgress;
} ncclNetDeviceHandle_v8_t;

typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v7_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v10_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v11_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v12_t;

typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC];
} ncclNetVDeviceProps_t;

typedef struct {
  int trafficClass;
} ncclNetCommConfig_t;

_Static_assert(sizeof(ncclResult_t) == 4, "ncclResult_t is int-sized");
_Static_assert(sizeof(ncclNetDeviceType) == 4, "ncclNetDeviceType is int-sized");
_Static_assert(sizeof(ncclNetDeviceHandle_v8_t) == 32, "device handle is 32 bytes");
_Static_assert(offsetof(ncclNetDeviceHandle_v8_t, handle) == 8, "device handle: handle at 8");
_Static_assert(offsetof(ncclNetDeviceHandle_v8_t, size) == 16, "device handle: size at 16");
_Static_assert(offsetof(ncclNetDeviceHandle_v8_t, needsProxyProgress) == 24,
               "device handle: needsProxyProgress at 24");
_Static_assert(sizeof(ncclNetVDeviceProps_t) == 20, "vProps is 20 bytes");

#endif
