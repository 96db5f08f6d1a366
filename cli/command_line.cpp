// SPDX-License-Identifier: MIT
/** @file The one option parser of every command, and `--help` from the same tables; see
 * command_line.h. */
#include "cli/command_line.h"

#include <getopt.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/units.h"
#include "hetopt/version.h"

namespace hetopt::cli {
namespace {

// getopt_long's `val` for the table's options: above every character a short option can be.
constexpr int kLongBase = 1000;

std::string canonicalName(const OptionSpec& o) { return o.aliasOf ? o.aliasOf : o.name; }

bool validProfileName(const std::string& name) {
  if (name.empty() || name.size() > 100) return false;
  for (char c : name)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

std::string numberText(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// "a|b|c" as "a, b or c".
std::string choiceList(const char* choices) {
  std::vector<std::string> items;
  for (const char* p = choices; *p;) {
    const char* bar = strchr(p, '|');
    items.emplace_back(p, bar ? bar - p : strlen(p));
    p = bar ? bar + 1 : p + strlen(p);
  }
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return out;
}

bool isChoice(const char* choices, const std::string& value) {
  return ("|" + std::string(choices) + "|").find("|" + value + "|") != std::string::npos;
}

bool validValue(const OptionSpec& o, const std::string& v) {
  if (v.empty()) return false;
  char* end = nullptr;
  switch (o.kind) {
    case ValueKind::Choice:
      return isChoice(o.choices, v);
    case ValueKind::Count: {
      errno = 0;
      const long n = strtol(v.c_str(), &end, 10);
      return errno == 0 && *end == '\0' && n >= o.min && n <= o.max;
    }
    case ValueKind::Number: {
      const double d = strtod(v.c_str(), &end);
      return *end == '\0' && std::isfinite(d) && d >= o.min && d <= o.max;
    }
    case ValueKind::Size: {
      uint64_t bytes = 0;
      return parseByteSize(v, &bytes) && (o.max <= 0 || static_cast<double>(bytes) <= o.max);
    }
    case ValueKind::Name:
      return validProfileName(v);
    default:
      return true;
  }
}

// The options a long name (as typed, before any '=') abbreviates, when it abbreviates more than
// one: getopt_long refuses it as ambiguous, and the message lists them.
std::string ambiguousMatches(const CommandSpec& spec, const std::string& typed) {
  std::vector<std::string> matches;
  for (const OptionSpec& o : spec.options) {
    if (strncmp(o.name, typed.c_str(), typed.size()) != 0) continue;
    const std::string canonical = "--" + canonicalName(o);
    bool seen = false;
    for (const std::string& m : matches) seen |= m == canonical;
    if (!seen) matches.push_back(canonical);
  }
  std::string out;
  if (matches.size() > 1)
    for (size_t i = 0; i < matches.size(); ++i) out += (i ? ", " : "") + matches[i];
  return out;
}

// The option an alias stands for (itself when it is none).
const OptionSpec& canonical(const CommandSpec& spec, const OptionSpec& o) {
  if (!o.aliasOf) return o;
  for (const OptionSpec& c : spec.options)
    if (!c.aliasOf && !strcmp(c.name, o.aliasOf)) return c;
  return o;
}

std::string spelled(const OptionSpec& o) { return std::string("--") + canonicalName(o); }

// Wraps one paragraph into lines of at most `width` columns, the first after `first`, the others
// after `rest`; a '\n' inside the paragraph breaks the line there. With `groups`, a "[...]" group
// is one word (a usage line's option and its value stay together).
void wrap(const std::string& text, size_t width, const std::string& first, const std::string& rest,
          std::string* out, bool groups = false) {
  std::string line = first;
  bool empty = true;
  size_t i = 0;
  while (i <= text.size()) {
    if (i == text.size() || text[i] == '\n') {
      *out += line + "\n";
      line = rest;
      empty = true;
      if (i == text.size()) break;
      ++i;
      continue;
    }
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = text.find_first_of(" \n", i);
    if (groups && text[i] == '[') {
      int depth = 0;
      for (end = i; end < text.size(); ++end) {
        depth += text[end] == '[' ? 1 : text[end] == ']' ? -1 : 0;
        if (depth == 0) break;
      }
      end = std::min(end + 1, text.size());
    }
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(i, end - i);
    if (!empty && line.size() + 1 + word.size() > width) {
      *out += line + "\n";
      line = rest;
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
    i = end;
  }
}

// Paragraphs (separated by a blank line) wrapped, a blank line between them.
void wrapParagraphs(const std::string& text, size_t width, const std::string& indent,
                    std::string* out) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find("\n\n", start);
    if (end == std::string::npos) end = text.size();
    if (start) *out += "\n";
    wrap(text.substr(start, end - start), width, indent, indent, out);
    start = end + 2;
  }
}

}  // namespace

std::string allowedValues(const OptionSpec& o) {
  switch (o.kind) {
    case ValueKind::Choice:
      return choiceList(o.choices);
    case ValueKind::Count:
      return "a whole number from " + numberText(o.min) + " to " + numberText(o.max);
    case ValueKind::Number:
      return "a number from " + numberText(o.min) + " to " + numberText(o.max);
    case ValueKind::Size:
      return "a size in bytes such as 4096, 64K, 64M or 1G";
    case ValueKind::Name:
      return "a name of letters, digits and . _ - (at most 100 characters)";
    case ValueKind::None:
      return "nothing";
    default:
      return std::string("a ") + o.valueName;
  }
}

const ParsedArgs::Given* ParsedArgs::find(const char* name) const {
  bool known = false;
  for (const OptionSpec& o : m_spec->options) known |= canonicalName(o) == name;
  if (!known) {
    fprintf(stderr, "hetopt: internal error: `hetopt %s` has no option --%s\n", m_spec->name, name);
    abort();
  }
  auto it = m_given.find(name);
  return it == m_given.end() ? nullptr : &it->second;
}

bool ParsedArgs::given(const char* name) const { return find(name) != nullptr; }

bool ParsedArgs::flag(const char* name) const {
  const Given* g = find(name);
  return g && g->bare;
}

std::string ParsedArgs::value(const char* name, const std::string& fallback) const {
  const Given* g = find(name);
  return g && g->hasValue ? g->value : fallback;
}

long ParsedArgs::count(const char* name, long fallback) const {
  const Given* g = find(name);
  return g && g->hasValue ? strtol(g->value.c_str(), nullptr, 10) : fallback;
}

double ParsedArgs::number(const char* name, double fallback) const {
  const Given* g = find(name);
  return g && g->hasValue ? strtod(g->value.c_str(), nullptr) : fallback;
}

uint64_t ParsedArgs::size(const char* name, uint64_t fallback) const {
  const Given* g = find(name);
  uint64_t bytes = fallback;
  if (g && g->hasValue) parseByteSize(g->value, &bytes);
  return bytes;
}

std::string ParsedArgs::givenExcept(std::initializer_list<const char*> allowed) const {
  std::string out;
  for (const auto& [name, g] : m_given) {
    bool ok = false;
    for (const char* a : allowed) ok |= name == a;
    if (!ok) out += (out.empty() ? "--" : ", --") + name;
  }
  return out;
}

bool parseArgs(const CommandSpec& spec, int argc, char** argv, ParsedArgs* out,
               std::string* error) {
  *out = ParsedArgs{};
  out->m_spec = &spec;
  std::vector<option> longs;
  // '+': stop at the first operand, so a program's own options stay its own; ':': missing values
  // come back as ':' and every message is ours.
  std::string shorts = spec.operands == Operands::Program ? "+:" : ":";
  for (size_t i = 0; i < spec.options.size(); ++i) {
    const OptionSpec& o = spec.options[i];
    const int has = o.kind == ValueKind::None ? no_argument
                    : o.valueOptional         ? optional_argument
                                              : required_argument;
    // An alias has its option's `val`: getopt_long then takes an abbreviation of both as one.
    const size_t target = static_cast<size_t>(&canonical(spec, o) - spec.options.data());
    longs.push_back({o.name, has, nullptr, kLongBase + static_cast<int>(target)});
    if (o.shortName) shorts += std::string(1, o.shortName) + (has == required_argument ? ":" : "");
  }
  longs.push_back({nullptr, 0, nullptr, 0});
  auto byShort = [&](int c) -> const OptionSpec* {
    for (const OptionSpec& o : spec.options)
      if (o.shortName == c) return &o;
    return nullptr;
  };
  optind = 0;  // glibc: start afresh (a second parse in one process, as the tests do)
  opterr = 0;
  for (;;) {
    const int c = getopt_long(argc, argv, shorts.c_str(), longs.data(), nullptr);
    if (c == -1) break;
    const OptionSpec* o = nullptr;
    bool asLong = true;  // how the option was spelled, for messages
    if (c >= kLongBase) {
      o = &spec.options[c - kLongBase];
    } else if (c == '?' || c == ':') {
      if (optopt >= kLongBase) {
        o = &spec.options[optopt - kLongBase];
      } else if (optopt) {
        o = byShort(optopt);
        asLong = false;
        if (!o) return *error = std::string("unknown option -") + static_cast<char>(optopt), false;
      } else {
        // An unknown or ambiguous long option: getopt_long has just stepped over it.
        std::string typed = argv[optind - 1];
        typed = typed.substr(0, typed.find('='));
        const std::string several =
            typed.compare(0, 2, "--") == 0 ? ambiguousMatches(spec, typed.substr(2)) : "";
        if (!several.empty())
          return *error = "ambiguous option " + typed + " (" + several + ")", false;
        return *error = "unknown option " + typed, false;
      }
      const std::string shown = asLong ? spelled(*o) : std::string("-") + o->shortName;
      if (c == '?') return *error = shown + " takes no value", false;
      const bool ranged = o->kind == ValueKind::Choice || o->kind == ValueKind::Count ||
                          o->kind == ValueKind::Number || o->kind == ValueKind::Size ||
                          o->kind == ValueKind::Name;
      return *error = shown + " needs a value (" + o->valueName +
                      (ranged ? ": " + allowedValues(*o) : "") + ")",
             false;
    } else {
      o = byShort(c);
      asLong = false;
    }
    const std::string name = canonicalName(*o);
    if (name == "help") return out->help = true, true;
    if (name == "version") return out->version = true, true;
    ParsedArgs::Given& g = out->m_given[name];
    if (o->kind == ValueKind::None || (o->valueOptional && !optarg)) {
      g.bare = true;
      continue;
    }
    const std::string value = optarg;
    if (!validValue(*o, value)) {
      const std::string shown = asLong ? spelled(*o) : std::string("-") + o->shortName;
      if (value.empty()) return *error = shown + " needs a value (" + o->valueName + ")", false;
      return *error = shown + " '" + value + "' is not " + allowedValues(*o), false;
    }
    g.hasValue = true;
    g.value = value;
  }
  out->operands.assign(argv + optind, argv + argc);
  const size_t n = out->operands.size();
  switch (spec.operands) {
    case Operands::None:
      if (n) return *error = "unexpected argument '" + out->operands[0] + "'", false;
      break;
    case Operands::Program:
      if (n < static_cast<size_t>(spec.minOperands)) return *error = "no program given", false;
      break;
    case Operands::Files:
      if (n < static_cast<size_t>(spec.minOperands))
        return *error = std::string("no ") + spec.operandUsage + " given", false;
      if (n > static_cast<size_t>(spec.maxOperands))
        return *error = std::string("one ") + spec.operandUsage + " at a time (got '" +
                        out->operands[0] + "' and '" + out->operands[1] + "')",
               false;
      break;
  }
  return true;
}

int usageError(const CommandSpec& spec, const std::string& error) {
  const std::string cmd = *spec.name ? std::string("hetopt ") + spec.name : "hetopt";
  fprintf(stderr, "%s: %s (see %s --help)\n", cmd.c_str(), error.c_str(), cmd.c_str());
  return 2;
}

int parseOrExit(const CommandSpec& spec, int argc, char** argv, ParsedArgs* out) {
  std::string error;
  if (!parseArgs(spec, argc, argv, out, &error)) return usageError(spec, error);
  if (out->help) {
    fputs(helpText(spec).c_str(), stdout);
    return 0;
  }
  if (out->version) {
    printf("%s\n", versionText().c_str());
    return 0;
  }
  return -1;
}

std::string versionText() {
  return "hetopt " HETOPT_VERSION_STRING " (trace format " +
         std::to_string(HETOPT_TRACE_FORMAT_VERSION) + ")";
}

namespace {
// "--db PATH", "-o, --output FILE", "--stats[=FILE.json]".
std::string optionSynopsis(const OptionSpec& o, bool withShort) {
  std::string s = withShort && o.shortName ? std::string("-") + o.shortName + ", " : "";
  s += std::string("--") + o.name;
  if (o.kind == ValueKind::None) return s;
  return s +
         (o.valueOptional ? std::string("[=") + o.valueName + "]" : std::string(" ") + o.valueName);
}
}  // namespace

std::string usageLine(const CommandSpec& spec) {
  std::string s = *spec.name ? std::string("hetopt ") + spec.name : "hetopt";
  for (const OptionSpec& o : spec.options) {
    if (o.aliasOf) continue;
    std::string one = o.shortName ? std::string("-") + o.shortName : std::string("--") + o.name;
    if (o.kind != ValueKind::None)
      one += o.valueOptional ? std::string("[=") + o.valueName + "]"
                             : (o.shortName ? std::string(" ") : std::string(" ")) + o.valueName;
    s += " [" + one + "]";
  }
  if (*spec.operandUsage) s += std::string(" ") + spec.operandUsage;
  return s;
}

std::string helpText(const CommandSpec& spec, size_t width) {
  std::string out;
  wrap(usageLine(spec), width,
       "usage: ", std::string(7 + (*spec.name ? 8 + strlen(spec.name) : 7), ' '), &out, true);
  out += "\n";
  wrapParagraphs(spec.description, width, "", &out);
  out += "\noptions:\n";
  constexpr size_t kColumn = 24;
  for (const OptionSpec& o : spec.options) {
    if (o.aliasOf) continue;
    std::string left = std::string(o.shortName ? "  " : "      ") + optionSynopsis(o, true);
    std::string help = o.help;
    for (const OptionSpec& a : spec.options)
      if (a.aliasOf && !strcmp(a.aliasOf, o.name)) help += std::string(" (also --") + a.name + ")";
    if (left.size() + 2 > kColumn) {
      out += left + "\n";
      left.clear();
    }
    left.resize(kColumn, ' ');
    wrap(help, width, left, std::string(kColumn, ' '), &out);
  }
  out += "\nexit status:\n";
  wrap(spec.exitStatus, width, "  ", "  ", &out);
  return out;
}

}  // namespace hetopt::cli
