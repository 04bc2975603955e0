/* SPDX-License-Identifier: Apache-2.0 */
#include "common/errno_names.h"

#include <errno.h>

const struct errno_name errno_names[] = {
  {EPERM, "EPERM", "Operation not permitted"},
  {ENOENT, "ENOENT", "No such file or directory"},
  {EINTR, "EINTR", "Interrupted system call"},
  {EIO, "EIO", "Input/output error"},
  {EBADF, "EBADF", "Bad file descriptor"},
  {EAGAIN, "EAGAIN", "Resource temporarily unavailable"},
  {ENOMEM, "ENOMEM", "Cannot allocate memory"},
  {EACCES, "EACCES", "Permission denied"},
  {EFAULT, "EFAULT", "Bad address"},
  {EBUSY, "EBUSY", "Device or resource busy"},
  {EEXIST, "EEXIST", "File exists"},
  {ENODEV, "ENODEV", "No such device"},
  {EINVAL, "EINVAL", "Invalid argument"},
  {ENFILE, "ENFILE", "Too many open files in system"},
  {EMFILE, "EMFILE", "Too many open files"},
  {ENOSPC, "ENOSPC", "No space left on device"},
  {EPIPE, "EPIPE", "Broken pipe"},
  {ERANGE, "ERANGE", "Numerical result out of range"},
  {ENOSYS, "ENOSYS", "Function not implemented"},
  {ENODATA, "ENODATA", "No data available"}, /* RTR with an emptied GID entry */
  {EPROTO, "EPROTO", "Protocol error"},
  {EOPNOTSUPP, "EOPNOTSUPP", "Operation not supported"},
  {EPROTONOSUPPORT, "EPROTONOSUPPORT", "Protocol not supported"},
  {EAFNOSUPPORT, "EAFNOSUPPORT", "Address family not supported by protocol"},
  {EADDRINUSE, "EADDRINUSE", "Address already in use"},
  {EADDRNOTAVAIL, "EADDRNOTAVAIL", "Cannot assign requested address"},
  {ENETDOWN, "ENETDOWN", "Network is down"},
  {ENETUNREACH, "ENETUNREACH", "Network is unreachable"},
  {ECONNABORTED, "ECONNABORTED", "Software caused connection abort"},
  {ECONNRESET, "ECONNRESET", "Connection reset by peer"},
  {ENOBUFS, "ENOBUFS", "No buffer space available"},
  {ENOTCONN, "ENOTCONN", "Transport endpoint is not connected"},
  {ETIMEDOUT, "ETIMEDOUT", "Connection timed out"},
  {ECONNREFUSED, "ECONNREFUSED", "Connection refused"},
  {EHOSTDOWN, "EHOSTDOWN", "Host is down"},
  {EHOSTUNREACH, "EHOSTUNREACH", "No route to host"},
  {EINPROGRESS, "EINPROGRESS", "Operation now in progress"},
};

const size_t errno_nnames = sizeof(errno_names) / sizeof(errno_names[0]);

const struct errno_name *errno_find(int err) {
  for (size_t i = 0; i < errno_nnames; i++)
    if (errno_names[i].err == err) return &errno_names[i];
  return NULL;
}

const char *errno_name(int err) {
  const struct errno_name *e = err ? errno_find(err) : NULL;
  return !err ? "OK" : e ? e->name : "errno";
}
