// SPDX-License-Identifier: MIT
/**
 * @file The man page and the bash completion, written from the same option tables as `--help`
 * (cli/command_specs.cpp) by the build (cli/gen_reference.cpp), so neither can drift from what the
 * parser accepts.
 */
#include <cstring>
#include <string>

#include "cli/command_line.h"
#include "common/options.h"
#include "hetopt/version.h"

namespace hetopt::cli {
namespace {

std::string commandName(const CommandSpec& s) {
  return *s.name ? std::string("hetopt ") + s.name : "hetopt";
}

// Text for roff: backslashes escaped, every '-' of a word that starts with one (an option) as a
// minus sign, so that a copied option is one; a line's leading '.' or '\'' kept as text.
std::string roff(const std::string& text) {
  std::string out;
  bool optionWord = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool wordStart = i == 0 || strchr(" [(|\n=`\"'", text[i - 1]);
    if (wordStart) optionWord = c == '-';
    if (c == ' ' || c == '\n') optionWord = false;
    const bool lineStart = out.empty() || out.back() == '\n';
    if (lineStart && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-' && optionWord) {
      out += "\\-";
    } else {
      out += c;
    }
  }
  return out;
}

// Paragraphs (blank-line separated) as roff paragraphs; a single '\n' is a line break.
std::string roffParagraphs(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find("\n\n", start);
    if (end == std::string::npos) end = text.size();
    std::string para = roff(text.substr(start, end - start));
    for (size_t p = 0; (p = para.find('\n', p)) != std::string::npos; p += 5)
      para.replace(p, 1, "\n.br\n");
    out += ".PP\n" + para + "\n";
    start = end + 2;
  }
  return out;
}

// A usage line for roff: each "[...]" group is one unbreakable word (its spaces unpaddable), so a
// line breaks only between options, never inside one.
std::string roffUsage(const std::string& usage) {
  std::string out;
  const std::string text = roff(usage);
  int depth = 0;
  for (char c : text) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    out += c == ' ' && depth > 0 ? std::string("\\ ") : std::string(1, c);
  }
  return out;
}

std::string optionTag(const OptionSpec& o) {
  std::string tag = o.shortName ? std::string("\\-") + o.shortName + ", " : "";
  tag += "\\fB" + roff(std::string("--") + o.name) + "\\fR";
  if (o.kind == ValueKind::None) return tag;
  return tag + (o.valueOptional ? "[=\\fI" + roff(o.valueName) + "\\fR]"
                                : " \\fI" + roff(o.valueName) + "\\fR");
}

void manOptions(const CommandSpec& s, std::string* out) {
  for (const OptionSpec& o : s.options) {
    if (o.aliasOf) continue;
    std::string help = o.help;
    for (const OptionSpec& a : s.options)
      if (a.aliasOf && !strcmp(a.aliasOf, o.name)) help += std::string(" (also --") + a.name + ")";
    *out += ".TP\n" + optionTag(o) + "\n" + roff(help) + "\n";
  }
}

std::string shellWords(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

std::string manPage() {
  const std::span<const CommandSpec> specs = commandSpecs();
  const CommandSpec& top = specs[0];
  std::string out =
      ".\\\" Generated from cli/command_specs.cpp and common/options.def by hetopt_gen_reference; "
      "do not edit.\n"
      ".TH HETOPT 1 \"\" \"hetopt " HETOPT_VERSION_STRING
      "\" \"User Commands\"\n"
      // Left-aligned, no hyphenation: option names are copied from here, whole.
      ".ad l\n.nh\n"
      ".SH NAME\nhetopt \\- " +
      roff(top.summary) + "\n.SH SYNOPSIS\n";
  for (const CommandSpec& s : specs) out += ".B " + roffUsage(usageLine(s)) + "\n.br\n";
  out += ".SH DESCRIPTION\n" + roffParagraphs(top.description);
  out += ".PP\nEach command is described below; `hetopt COMMAND --help` prints the same text.\n";
  out += ".SH OPTIONS\n";
  manOptions(top, &out);
  out += ".SH COMMANDS\n";
  for (const CommandSpec& s : specs.subspan(1)) {
    out += ".SS \"" + roff(commandName(s)) + "\"\n" + roff(s.summary) + ".\n";
    out += ".PP\n.B Usage:\n" + roffUsage(usageLine(s)) + "\n";
    out += roffParagraphs(s.description);
    out += ".PP\n.B Options:\n";
    manOptions(s, &out);
    out += ".PP\n.B Exit status:\n" + roff(s.exitStatus) + "\n";
  }
  out += ".SH EXIT STATUS\n" + roff(top.exitStatus) +
         " Each command's own is described with it above.\n";
  out +=
      ".SH ENVIRONMENT\nThe hetopt commands set these for the program; the shim reads no other.\n";
  for (int i = 0; i < static_cast<int>(Option::Count); ++i) {
    const OptionInfo& o = optionInfo(static_cast<Option>(i));
    out += ".TP\n.B " + std::string(o.envName) + "\n" + roff(o.doc);
    if (*o.defaultValue) out += roff(std::string(" (default: ") + o.defaultValue + ")");
    out += "\n";
  }
  out += ".TP\n.B XDG_DATA_HOME\nwhere the DB lives by default ($XDG_DATA_HOME/hetopt/hetopt.db)\n";
  out +=
      ".TP\n.B XDG_CACHE_HOME\nwhere plans, run records and ledgers live ($XDG_CACHE_HOME/hetopt, "
      "else "
      "~/.cache/hetopt)\n";
  out +=
      ".SH FILES\n.TP\n.I ~/.local/share/hetopt/hetopt.db\nthe DB of characterizations and "
      "profiles "
      "(0600, in a 0700 directory)\n.TP\n.I ~/.cache/hetopt/plans/\nplans, run records and run "
      "ledgers\n";
  out += ".SH SEE ALSO\nThe README and docs/ of hetopt, installed under share/doc/hetopt.\n";
  return out;
}

std::string bashCompletion() {
  const std::span<const CommandSpec> specs = commandSpecs();
  std::string out =
      "# bash completion for hetopt. Generated from cli/command_specs.cpp by hetopt_gen_reference; "
      "do not\n"
      "# edit. Completes commands, each command's options and their values; after the program "
      "(its\n"
      "# first argument that is not an option, or --) it completes as for any command line.\n";
  // What a command's options are, which of them take a value, and how to complete that value.
  std::string optionsCase, valueCase, takesCase;
  std::vector<std::string> commands, programCommands;
  for (const CommandSpec& s : specs) {
    const std::string key = *s.name ? s.name : "-";
    if (*s.name) commands.push_back(s.name);
    if (*s.name && s.operands == Operands::Program) programCommands.push_back(s.name);
    std::vector<std::string> words;
    for (const OptionSpec& o : s.options) {
      if (o.aliasOf) continue;
      words.push_back(std::string("--") + o.name + (o.valueOptional ? "=" : ""));
      if (o.valueOptional) words.push_back(std::string("--") + o.name);
      if (o.kind == ValueKind::None) continue;
      // Case patterns: command:--name, and its short form and aliases.
      std::string names = key + ":--" + o.name;
      if (o.shortName) names += "|" + key + ":-" + o.shortName;
      for (const OptionSpec& a : s.options)
        if (a.aliasOf && !strcmp(a.aliasOf, o.name)) names += "|" + key + ":--" + a.name;
      std::string how;
      switch (o.kind) {
        case ValueKind::Choice: {
          std::string choices = o.choices;
          for (char& c : choices)
            if (c == '|') c = ' ';
          how = "COMPREPLY=($(compgen -W '" + choices + "' -- \"$cur\"))";
          break;
        }
        case ValueKind::File:
          how = "COMPREPLY=($(compgen -f -- \"$cur\"))";
          break;
        case ValueKind::Dir:
          how = "COMPREPLY=($(compgen -d -- \"$cur\"))";
          break;
        case ValueKind::Program:
          how = "COMPREPLY=($(compgen -c -- \"$cur\"))";
          break;
        case ValueKind::Text:
          how = !strcmp(o.name, "device") ? "COMPREPLY=($(compgen -W 'gpu cpu' -- \"$cur\"))"
                                          : "COMPREPLY=()";
          break;
        default:
          how = "COMPREPLY=()";
      }
      valueCase += "    " + names + ") " + how + " ;;\n";
      if (!o.valueOptional) takesCase += "    " + names + ") return 0 ;;\n";
    }
    optionsCase += "    " + key + ") echo '" + shellWords(words) + "' ;;\n";
  }
  out += "_hetopt_options() {\n  case $1 in\n" + optionsCase + "  esac\n}\n";
  out +=
      "# Whether option $2 of command $1 takes the next word as its value.\n"
      "_hetopt_takes_value() {\n  case $1:$2 in\n" +
      takesCase + "  esac\n  return 1\n}\n";
  out +=
      "# Completes the value of option $2 of command $1 into COMPREPLY; false when it takes none.\n"
      "_hetopt_value() {\n  case $1:$2 in\n" +
      valueCase + "    *) return 1 ;;\n  esac\n}\n";
  out += "_hetopt_program_commands='" + shellWords(programCommands) + "'\n";
  out +=
      "# Completes the program (at word $1) and its arguments: the program's own, never hetopt's.\n"
      "_hetopt_program() {\n"
      "  if (($1 == COMP_CWORD)); then COMPREPLY=($(compgen -c -- \"$cur\")); else "
      "COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
      "}\n";
  out +=
      "_hetopt() {\n"
      "  local cword=$COMP_CWORD cur=${COMP_WORDS[COMP_CWORD]} opt= cmd=- i=1 w\n"
      "  # '=' breaks words: --db=x arrives as --db, =, x.\n"
      "  if [[ $cur == = ]]; then opt=${COMP_WORDS[cword-1]}; cur=\n"
      "  elif ((cword > 1)) && [[ ${COMP_WORDS[cword-1]} == = ]]; then opt=${COMP_WORDS[cword-2]}\n"
      "  fi\n"
      "  # The command: the first word after hetopt that is not an option.\n"
      "  while ((i < cword)); do\n"
      "    w=${COMP_WORDS[i]}; ((i++))\n"
      "    if [[ $w != -* ]]; then cmd=$w; break; fi\n"
      "  done\n"
      "  if [[ $cmd == - ]]; then\n"
      "    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$(_hetopt_options -)\" -- "
      "\"$cur\"))\n"
      "    else COMPREPLY=($(compgen -W '" +
      shellWords(commands) +
      "' -- \"$cur\")); fi\n"
      "    return 0\n"
      "  fi\n"
      "  # The command's options, up to the program: the first word that is neither an option nor\n"
      "  # an option's value, or the word after --.\n"
      "  while ((i < cword)); do\n"
      "    w=${COMP_WORDS[i]}\n"
      "    if [[ $w == -- ]]; then _hetopt_program $((i + 1)); return 0; fi\n"
      "    if [[ ${COMP_WORDS[i+1]-} == = ]]; then ((i += 3)); continue; fi\n"
      "    if [[ $w == -* ]] && _hetopt_takes_value \"$cmd\" \"$w\"; then\n"
      "      if ((i + 1 == cword)); then _hetopt_value \"$cmd\" \"$w\"; return 0; fi\n"
      "      ((i++))\n"
      "    elif [[ $w == -* ]]; then :\n"
      "    elif [[ \" $_hetopt_program_commands \" == *\" $cmd \"* ]]; then\n"
      "      _hetopt_program $i; return 0\n"
      "    fi\n"
      "    ((i++))\n"
      "  done\n"
      "  if [[ -n $opt ]]; then _hetopt_value \"$cmd\" \"$opt\"; return 0; fi\n"

      "  if [[ $cur == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$(_hetopt_options \"$cmd\")\" -- \"$cur\"))\n"
      "    [[ ${#COMPREPLY[@]} == 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null\n"
      "  elif [[ \" $_hetopt_program_commands \" == *\" $cmd \"* ]]; then\n"
      "    _hetopt_program \"$cword\"\n"
      "  else\n"
      "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      "  fi\n"
      "  return 0\n"
      "}\n"
      "complete -F _hetopt hetopt\n";
  return out;
}

}  // namespace hetopt::cli
