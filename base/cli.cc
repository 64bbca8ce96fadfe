#include "base/cli.h"

#include <algorithm>
#include <cstdio>

namespace ringmaster::cli {

std::vector<std::string> Args(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return args;
}

std::unique_ptr<CLI::App> NewApp(const std::string& program, const std::string& description,
                                 const std::string& footer) {
  auto app = std::make_unique<CLI::App>(description, program);
  // A flag given twice: the last one wins (as with the hand-written parsers before, and most tools).
  app->option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  if (!footer.empty()) app->footer(footer);
  return app;
}

StatusOr<Parsed> Parse(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return Parsed::kHelp;
  } catch (const CLI::CallForAllHelp&) {
    return Parsed::kHelp;
  } catch (const CLI::ParseError& e) {
    return InvalidArgumentError(e.what());
  } catch (const std::exception& e) {  // a conversion CLI11 left to the standard library
    return InvalidArgumentError(e.what());
  }
  return Parsed::kRun;
}

std::optional<int> ExitEarly(const std::string& program, const Status& parsed, bool help,
                             const std::function<std::string()>& help_text) {
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s: %s\nRun with --help for the flags and their defaults.\n", program.c_str(),
                 parsed.message().c_str());
    return kExitUsage;
  }
  if (help) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

const CLI::Validator& NotNegative() {
  static const CLI::Validator kNotNegative(
      [](std::string& text) -> std::string {
        auto first = std::find_if(text.begin(), text.end(), [](char c) { return c != ' ' && c != '\t'; });
        return first != text.end() && *first == '-' ? "Value " + text + " must not be negative" : std::string();
      },
      "NOT NEGATIVE");
  return kNotNegative;
}

}  // namespace ringmaster::cli
