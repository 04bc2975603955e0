/* SPDX-License-Identifier: Apache-2.0 */
/* Binds every glibc function the plugin and the tools call to its oldest
 * version, so a build on a new distribution loads on the oldest one clusters
 * run: glibc 2.26 (Amazon Linux 2; EL8 and Debian 10 have 2.28, Ubuntu 18.04
 * 2.27). The build force-includes this file in every object when it targets
 * glibc without a sanitizer (a sanitizer's interceptors are unversioned).
 *
 * glibc 2.34 moved libpthread and libdl into libc and gave the moved
 * functions new versions; 2.32 and 2.33 did the same for pthread_sigmask and
 * the stat family; 2.28 added fcntl64. The old versions remain in new
 * glibc, so we link against them; the link also names libpthread.so.0 and
 * libdl.so.2, where old glibc defines them. */
#ifndef DIAG_COMMON_GLIBC_PINS_H
#define DIAG_COMMON_GLIBC_PINS_H

#if defined(__linux__)
#include <sys/stat.h>
#endif
#if defined(__GLIBC__)

#if defined(__x86_64__)
#define GLIBC_PINS_BASE "GLIBC_2.2.5"
#define GLIBC_PINS_2_3_3 "GLIBC_2.3.3"
#define GLIBC_PINS_2_12 "GLIBC_2.12"
#define GLIBC_PINS_STAT_VER 1
#elif defined(__aarch64__)
#define GLIBC_PINS_BASE "GLIBC_2.17" /* the first aarch64 glibc */
#define GLIBC_PINS_2_3_3 GLIBC_PINS_BASE
#define GLIBC_PINS_2_12 GLIBC_PINS_BASE
#define GLIBC_PINS_STAT_VER 0
#endif

#ifdef GLIBC_PINS_BASE
#define GLIBC_PIN(sym, old, ver) __asm__(".symver " #sym "," #old "@" ver)

GLIBC_PIN(dlopen, dlopen, GLIBC_PINS_BASE);
GLIBC_PIN(dlsym, dlsym, GLIBC_PINS_BASE);
GLIBC_PIN(dlvsym, dlvsym, GLIBC_PINS_BASE);
GLIBC_PIN(dlclose, dlclose, GLIBC_PINS_BASE);
GLIBC_PIN(dlerror, dlerror, GLIBC_PINS_BASE);
GLIBC_PIN(dladdr, dladdr, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_create, pthread_create, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_detach, pthread_detach, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_join, pthread_join, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_once, pthread_once, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_kill, pthread_kill, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_sigmask, pthread_sigmask, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_key_create, pthread_key_create, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_key_delete, pthread_key_delete, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_getspecific, pthread_getspecific, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_setspecific, pthread_setspecific, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_mutexattr_init, pthread_mutexattr_init, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_mutexattr_settype, pthread_mutexattr_settype, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_mutexattr_destroy, pthread_mutexattr_destroy, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_mutex_trylock, pthread_mutex_trylock, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_condattr_init, pthread_condattr_init, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_condattr_setclock, pthread_condattr_setclock, GLIBC_PINS_2_3_3);
GLIBC_PIN(pthread_condattr_destroy, pthread_condattr_destroy, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_rwlock_rdlock, pthread_rwlock_rdlock, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_rwlock_wrlock, pthread_rwlock_wrlock, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_rwlock_unlock, pthread_rwlock_unlock, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_setname_np, pthread_setname_np, GLIBC_PINS_2_12);
GLIBC_PIN(pthread_getname_np, pthread_getname_np, GLIBC_PINS_2_12);
GLIBC_PIN(pthread_attr_setstacksize, pthread_attr_setstacksize, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_attr_getstacksize, pthread_attr_getstacksize, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_getattr_np, pthread_getattr_np, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_cancel, pthread_cancel, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_rwlock_init, pthread_rwlock_init, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_rwlock_destroy, pthread_rwlock_destroy, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_mutex_timedlock, pthread_mutex_timedlock, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_barrier_init, pthread_barrier_init, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_barrier_wait, pthread_barrier_wait, GLIBC_PINS_BASE);
GLIBC_PIN(pthread_barrier_destroy, pthread_barrier_destroy, GLIBC_PINS_BASE);
GLIBC_PIN(sem_init, sem_init, GLIBC_PINS_BASE);
GLIBC_PIN(sem_post, sem_post, GLIBC_PINS_BASE);
GLIBC_PIN(sem_wait, sem_wait, GLIBC_PINS_BASE);
GLIBC_PIN(sem_destroy, sem_destroy, GLIBC_PINS_BASE);
/* The large-file fcntl is plain fcntl on 64-bit targets. */
GLIBC_PIN(fcntl64, fcntl, GLIBC_PINS_BASE);

/* stat and friends were inline wrappers around __xstat64 before 2.33. */
int __xstat64(int ver, const char *path, struct stat64 *buf);
int __lxstat64(int ver, const char *path, struct stat64 *buf);
int __fxstat64(int ver, int fd, struct stat64 *buf);
GLIBC_PIN(__xstat64, __xstat64, GLIBC_PINS_BASE);
GLIBC_PIN(__lxstat64, __lxstat64, GLIBC_PINS_BASE);
GLIBC_PIN(__fxstat64, __fxstat64, GLIBC_PINS_BASE);

static inline int glibc_pins_stat(const char *path, struct stat *buf) {
  return __xstat64(GLIBC_PINS_STAT_VER, path, (struct stat64 *)(void *)buf);
}
static inline int glibc_pins_lstat(const char *path, struct stat *buf) {
  return __lxstat64(GLIBC_PINS_STAT_VER, path, (struct stat64 *)(void *)buf);
}
static inline int glibc_pins_fstat(int fd, struct stat *buf) {
  return __fxstat64(GLIBC_PINS_STAT_VER, fd, (struct stat64 *)(void *)buf);
}
/* Function-like, so 'struct stat' is untouched. */
#define stat(p, b) glibc_pins_stat(p, b)
#define lstat(p, b) glibc_pins_lstat(p, b)
#define fstat(fd, b) glibc_pins_fstat(fd, b)
#endif /* GLIBC_PINS_BASE */
#endif
#endif
