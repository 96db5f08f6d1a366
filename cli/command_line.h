// SPDX-License-Identifier: MIT
/**
 * @file The command line of every hetopt command: one table of options per command (data, in
 * cli/command_specs.cpp), one parser over them (getopt_long), and the texts made from the same
 * tables: `--help`, the man page and the bash completion (cli/reference.cpp), so none can drift
 * from what the parser accepts. Not thread-safe (getopt_long keeps global state); the driver
 * parses once, at start.
 */
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace hetopt::cli {

/// What an option's value is: the parser checks it and names the allowed range when it is bad.
enum class ValueKind : uint8_t {
  None,     ///< a flag
  Text,     ///< any text (a device filter)
  File,     ///< a file path (completed as files)
  Dir,      ///< a directory (completed as directories)
  Program,  ///< a program to look up (completed as commands)
  Choice,   ///< one of `choices`, '|'-separated
  Count,    ///< a whole number from `min` to `max`
  Number,   ///< a decimal number from `min` to `max`
  Size,     ///< a byte size: 4096, 64K, 64M, 1G
  Name,     ///< a profile name: letters, digits, '.', '_', '-', at most 100
};

struct OptionSpec {
  const char* name;    ///< long name without "--"
  char shortName = 0;  ///< 'o' for -o; 0 when none
  ValueKind kind = ValueKind::None;
  const char* valueName = "";  ///< "PATH", "N" (help, man page, usage line)
  const char* help = "";       ///< one paragraph, unwrapped
  const char* choices = "";    ///< Choice: "on|off"
  double min = 0, max = 0;     ///< Count, Number
  /// The value only as --name=VALUE; bare --name is a flag of its own (`run --stats`).
  bool valueOptional = false;
  /// Accepted as another spelling of that option, and listed nowhere but under it.
  const char* aliasOf = nullptr;
};

/// What follows a command's options.
enum class Operands : uint8_t {
  None,     ///< nothing
  Files,    ///< up to `maxOperands` names; options may come after them
  Program,  ///< a program and its arguments: parsing stops at it (or at "--"), so its own
            ///< options are never read as hetopt's
};

struct CommandSpec {
  const char* name;     ///< "run"; "" for `hetopt` itself
  const char* summary;  ///< one line: `hetopt --help`, the man page
  Operands operands = Operands::None;
  const char* operandUsage = "";  ///< "[--] program [args...]", "TRACE"
  int minOperands = 0;            ///< fewest operands (a command that runs a program: 1)
  int maxOperands = 0;            ///< Files: most operands
  const char* description = "";   ///< paragraphs separated by a blank line, unwrapped
  std::span<const OptionSpec> options;
  const char* exitStatus = "";  ///< one paragraph
};

/// Every command's table, in the order `hetopt --help` lists them; commandSpecs()[0] is `hetopt`
/// itself (its options only: --help, --version, --help-env).
std::span<const CommandSpec> commandSpecs();
/// The table of `name` ("" for hetopt itself); aborts on a name no table has (a programming error).
const CommandSpec& commandSpec(const char* name);

/// A command line as the table read it.
class ParsedArgs {
 public:
  /// Whether the option (by long name; an alias counts as its option) was given at all.
  bool given(const char* name) const;
  /// A flag, or the bare form of an option whose value is optional (`--stats`).
  bool flag(const char* name) const;
  /// The last value given (with --name VALUE or --name=VALUE), else `fallback`.
  std::string value(const char* name, const std::string& fallback = {}) const;
  /// A Count option's value, else `fallback`.
  long count(const char* name, long fallback) const;
  /// A Number option's value, else `fallback`.
  double number(const char* name, double fallback) const;
  /// A Size option's value in bytes, else `fallback`.
  uint64_t size(const char* name, uint64_t fallback) const;
  /// Options given other than `allowed`, as they are spelled ("--force, --stats").
  std::string givenExcept(std::initializer_list<const char*> allowed) const;

  std::vector<std::string> operands;  ///< files, or the program and its arguments
  bool help = false, version = false;

 private:
  friend bool parseArgs(const CommandSpec&, int, char**, ParsedArgs*, std::string*);
  struct Given {
    bool bare = false;  ///< given without a value
    bool hasValue = false;
    std::string value;
  };
  const Given* find(const char* name) const;
  const CommandSpec* m_spec = nullptr;
  std::map<std::string, Given> m_given;
};

/// Parses argv (argv[0] is the command's name) by the table. False with a one-line *error (no
/// prefix, no hint) on an unknown option, a missing or bad value (naming the allowed range) or
/// wrong operands. --help and --version stop parsing and succeed with their flag set.
bool parseArgs(const CommandSpec& spec, int argc, char** argv, ParsedArgs* out, std::string* error);

/// Says a usage error the one way every command does, "hetopt CMD: <error> (see hetopt CMD
/// --help)", and returns 2, hetopt's exit status for its own errors.
int usageError(const CommandSpec& spec, const std::string& error);

/// Parses, and handles --help and --version and errors: returns -1 when the command goes on with
/// *out, else the exit status to return (0 after help or version, 2 after an error).
int parseOrExit(const CommandSpec& spec, int argc, char** argv, ParsedArgs* out);

/// `hetopt CMD --help`: the usage line (every option), the description, the options, the exit
/// status; wrapped at `width` columns.
std::string helpText(const CommandSpec& spec, size_t width = 80);
/// The usage line of `spec` with every option: "hetopt run [-h] [-V] [--db PATH] ... [--] program
/// [args...]" (unwrapped).
std::string usageLine(const CommandSpec& spec);
/// "hetopt 0.1.0 (trace format N)".
std::string versionText();
/// What a value of this option must be, for messages and help ("a whole number from 1 to 50").
std::string allowedValues(const OptionSpec& option);

/// The man page hetopt(1), in roff, from every table (and common/options.def for ENVIRONMENT).
std::string manPage();
/// A bash completion script for hetopt (`complete -F _hetopt hetopt`), from every table.
std::string bashCompletion();

}  // namespace hetopt::cli
