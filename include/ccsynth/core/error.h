#pragma once
// Errors of ccsynth. User mistakes (bad files, flags, impossible requests) throw UserError,
// which names the file, the field and the reason; broken invariants throw InternalError through
// CCSYNTH_CHECK. Expected outcomes (infeasible, timed out, verification failures) are values,
// never exceptions.

#include <sstream>
#include <stdexcept>
#include <string>

namespace ccsynth {

/// A mistake in the user's input: the CLI prints it and exits with code 2.
class UserError : public std::runtime_error {
 public:
  /// `file` may be empty (e.g. for command-line flags); `field` names the offending key, flag or
  /// element (JSON pointer or XPath-like), `reason` says what is wrong.
  UserError(std::string file, std::string field, std::string reason);

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  std::string field_;
  std::string reason_;
};

/// A broken invariant inside ccsynth (a bug): the CLI prints it and exits with code 3.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

namespace detail {
/// Collects the message of a failed CCSYNTH_CHECK and throws InternalError when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* condition, const char* file, int line);
  [[noreturn]] ~CheckFailure() noexcept(false);
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace ccsynth

/// CCSYNTH_CHECK(cond) << "message": throws InternalError with the message when cond is false.
#define CCSYNTH_CHECK(cond) \
  if (cond) {               \
  } else                    \
    ::ccsynth::detail::CheckFailure(#cond, __FILE__, __LINE__)
