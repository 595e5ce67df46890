//===- Status.h - Errors carried between runtime layers ---------*- C++ -*-===//

#ifndef DDPRT_STATUS_H
#define DDPRT_STATUS_H

#include "ddp/Runtime/ddprt.h"

#include <sstream>
#include <string>
#include <utility>

namespace ddprt {

/// A ddprt_status code with its message. The message names the failed call
/// and its arguments; the rank is prefixed where the error is reported.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(ddprt_status code, std::string message)
      : code(code), message(std::move(message)) {}

  static Status ok() { return {}; }

  bool isOk() const { return code == DDPRT_OK; }
  ddprt_status getCode() const { return code; }
  const std::string &getMessage() const { return message; }

private:
  ddprt_status code = DDPRT_OK;
  std::string message;
};

/// Streams all arguments into one string.
template <typename... Args> std::string concat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
Status makeError(ddprt_status code, const Args &...args) {
  return Status(code, concat(args...));
}

/// Returns from the enclosing function if `expr` is an error.
#define DDPRT_RETURN_IF_ERROR(expr)                                            \
  do {                                                                         \
    ::ddprt::Status ddprtStatus_ = (expr);                                     \
    if (!ddprtStatus_.isOk())                                                  \
      return ddprtStatus_;                                                     \
  } while (false)

/// Prints `message` and ends every rank of the job (MPI_Abort when MPI is
/// up, else abort()). For errors that leave the job unable to go on: a
/// collective that timed out, a failure on a communication thread.
[[noreturn]] void fatalError(const std::string &message);

} // namespace ddprt

#endif // DDPRT_STATUS_H
