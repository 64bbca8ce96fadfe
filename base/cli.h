// Command lines, parsed the same way in every Ringmaster binary (CLI11 underneath).
//
// Each binary has a `StatusOr<XOptions> ParseXOptions(const std::vector<std::string>& args)` that binds a
// CLI::App (NewApp) to its options struct, calls cli::Parse and then checks what CLI11 cannot (relations
// between flags); its main() ends the command-line stage with cli::ExitEarly. So, for every binary:
//   --help, -h   prints every flag with its default on stdout and exits 0;
//   a bad command line (an unknown flag, a missing or malformed value, a value out of range) prints one
//                line naming the flag on stderr and exits 2 (kExitUsage).
//
// Errors: Parse returns InvalidArgument with CLI11's message (it names the flag); no exception leaves
// this library (CLI11's are caught in Parse). Thread-safety: no shared state; one CLI::App per thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace ringmaster::cli {

// The exit status of a bad command line (also what a program's own usage checks should return).
inline constexpr int kExitUsage = 2;

// argv[1..argc) as strings (argv[0], the program, left out).
std::vector<std::string> Args(int argc, const char* const* argv);

// A CLI::App for `program` that shows every option's default in --help and lets the last of a repeated
// flag win. `description` is printed above the flags, `footer` (may be empty) below them.
std::unique_ptr<CLI::App> NewApp(const std::string& program, const std::string& description,
                                 const std::string& footer = "");

enum class Parsed { kRun, kHelp };

// Parses `args` (without argv[0]) into the variables app's options are bound to. kHelp when --help or -h
// was given (nothing else is checked then). Errors: InvalidArgument with a message naming the flag.
StatusOr<Parsed> Parse(CLI::App& app, const std::vector<std::string>& args);

// Ends the command-line stage of main(): a failed parse prints "<program>: <message>" and a hint on
// stderr and returns kExitUsage; help prints help_text() on stdout and returns 0; otherwise nullopt
// (the program runs).
std::optional<int> ExitEarly(const std::string& program, const Status& parsed, bool help,
                             const std::function<std::string()>& help_text);

// The same for a parse function's result; Options has a `bool help` member.
template <typename Options>
std::optional<int> ExitEarly(const std::string& program, const StatusOr<Options>& parsed,
                             const std::function<std::string()>& help_text) {
  return ExitEarly(program, parsed.status(), parsed.ok() && parsed->help, help_text);
}

// The usual shape of a program's flags: an Options struct with a `bool help` member and a function that
// binds its members to a new CLI::App (each binding's default is the member's initial value).
template <typename Options>
using AppFactory = std::unique_ptr<CLI::App> (*)(Options&);

// --help's text for `new_app`, with the defaults of a default-constructed Options.
template <typename Options>
std::string UsageOf(AppFactory<Options> new_app) {
  Options defaults;
  return new_app(defaults)->help();
}

// Parses `args` into a fresh Options through `new_app`. On --help: a default Options with help = true
// (nothing else checked). Errors: as Parse. A program's own cross-flag checks come after this.
template <typename Options>
StatusOr<Options> ParseInto(AppFactory<Options> new_app, const std::vector<std::string>& args) {
  Options options;
  auto app = new_app(options);
  RINGMASTER_ASSIGN_OR_RETURN(Parsed parsed, Parse(*app, args));
  if (parsed == Parsed::kHelp) {
    Options help;
    help.help = true;
    return help;
  }
  return options;
}

// ExitEarly for a program whose --help text is UsageOf(new_app).
template <typename Options>
std::optional<int> ExitEarly(const std::string& program, const StatusOr<Options>& parsed, AppFactory<Options> new_app) {
  return ExitEarly(program, parsed, std::function<std::string()>([new_app] { return UsageOf(new_app); }));
}

// Binds --flag to *out through `parse` (e.g. a ParseBackend): a value `parse` refuses is a bad command
// line whose message names the flag and carries parse's message. `default_text` is shown in --help.
template <typename T>
CLI::Option* AddParsed(CLI::App& app, const std::string& flag, T* out,
                       std::function<StatusOr<T>(const std::string&)> parse, const std::string& help,
                       const std::string& default_text) {
  std::string name = flag;
  CLI::Option* option = app.add_option_function<std::string>(
      flag,
      [out, parse = std::move(parse), name](const std::string& text) {
        StatusOr<T> value = parse(text);
        if (!value.ok()) throw CLI::ValidationError(name, value.status().message());  // caught in Parse
        *out = *std::move(value);
      },
      help);
  option->default_str(default_text);
  return option;
}

// Check for unsigned options: CLI11 converts "-3" to a huge unsigned number; this refuses it.
const CLI::Validator& NotNegative();

}  // namespace ringmaster::cli
