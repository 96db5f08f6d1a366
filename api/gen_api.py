#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates hetopt's OpenCL API code from api/opencl_api.txt (the one description of the API).

Usage: gen_api.py TABLE OUTDIR
Writes OUTDIR/api_table.h, api_table.cpp (ids, kinds, per-argument roles), shim_wrappers.inc (the
shim's LD_PRELOAD exports, layer dispatch wrappers, wrapped extension functions) and
shim_exports.map (the shim's version script). Output is deterministic; files are rewritten only
when their content changes so that builds stay incremental.
"""
import os
import re
import sys

HANDLE_TYPES = {
    'cl_platform_id': 'Platform', 'cl_device_id': 'Device', 'cl_context': 'Context',
    'cl_command_queue': 'Queue', 'cl_mem': 'Mem', 'cl_program': 'Program', 'cl_kernel': 'Kernel',
    'cl_event': 'Event', 'cl_sampler': 'Sampler',
}
KINDS = ['h2d', 'd2h', 'd2d', 'fill', 'map', 'unmap', 'launch', 'svm_copy', 'migrate', 'sync',
         'marker', 'svm_alloc', 'svm_free', 'create_context', 'create_queue', 'create_mem',
         'create_kernel', 'program', 'set_arg', 'release', 'retain', 'query', 'ext_lookup', 'other']
ROLES = ['writes', 'reads', 'launch', 'host_read', 'host_write', 'host_read_rect',
         'host_write_rect', 'host_read_image', 'host_write_image', 'host_init', 'host_init_image',
         'map', 'unmap', 'mapped_ptr', 'svm_dst', 'svm_src', 'svm_list', 'arg_value', 'wait',
         'event_out', 'errcode', 'in_handles', 'out_handles', 'blocking']
RETURN_ROLES = ['new', 'mapped', 'mapped_image', 'svm_new']
# Roles whose argument names host memory the call may move (shim/core/host_ranges.h works out the
# range): what makes a call a host<->device transfer, in every mode.
HOST_RANGE_ROLES = ['host_read', 'host_write', 'host_read_rect', 'host_write_rect',
                    'host_read_image', 'host_write_image', 'host_init', 'host_init_image',
                    'svm_dst', 'svm_src']
CALL_FLAGS = ['twin']
assert set(HOST_RANGE_ROLES) <= set(ROLES)


def camel(s):
    return ''.join(p.capitalize() for p in s.split('_'))


class Param:
    def __init__(self, decl):
        self.decl = decl
        m = re.search(r'\(\s*CL_CALLBACK\s*\*\s*(\w+)\s*\)', decl)
        if m:
            self.name, self.cls = m.group(1), 'Callback'
            return
        self.name = re.findall(r'\w+', decl)[-1]
        type_part = decl[:decl.rfind(self.name)].strip()
        self.type = ' '.join(type_part.split())
        bare = self.type.replace('const ', '').strip()
        # What a pointer's elements are when they are handles (arrays of devices, buffers, ...).
        self.elem = HANDLE_TYPES.get(bare.replace('*', '').strip(), 'Scalar') if bare.count('*') == 1 else 'Scalar'
        if '*' in bare:
            self.cls = 'Pointer'
        elif bare in HANDLE_TYPES:
            self.cls = HANDLE_TYPES[bare]
        else:
            self.cls = 'Scalar'


def split_params(text):
    out, depth, cur = [], 0, ''
    for c in text:
        depth += (c == '(') - (c == ')')
        if c == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
        else:
            cur += c
    if cur.strip() and cur.strip() != 'void':
        out.append(cur.strip())
    return out


class Function:
    def __init__(self, line, lineno):
        cols = [c.strip() for c in line.split('|')]
        if len(cols) != 6:
            sys.exit(f'opencl_api.txt:{lineno}: expected 6 columns, got {len(cols)}')
        self.name, self.origin, self.kind, self.ret, params, roles = cols
        if self.origin not in ('core', 'ext'):
            sys.exit(f'opencl_api.txt:{lineno}: bad origin {self.origin}')
        if self.kind not in KINDS:
            sys.exit(f'opencl_api.txt:{lineno}: unknown kind {self.kind}')
        self.params = [Param(p) for p in split_params(params)]
        names = [p.name for p in self.params]
        self.roles, self.ret_role, self.flags = {}, ('None', []), set()
        for r in roles.split():
            m = re.fullmatch(r'(\w+):(\w+)(?:\(([\w,]*)\))?', r)
            if not m:
                sys.exit(f'opencl_api.txt:{lineno}: bad role {r}')
            who, role, refs = m.group(1), m.group(2), (m.group(3) or '')
            refs = [x for x in refs.split(',') if x]
            for ref in refs:
                if ref not in names:
                    sys.exit(f'opencl_api.txt:{lineno}: role {r} names unknown parameter {ref}')
            idx = [names.index(x) for x in refs]
            if who == 'call':
                if role not in CALL_FLAGS or refs:
                    sys.exit(f'opencl_api.txt:{lineno}: unknown call flag {role}')
                self.flags.add(role)
            elif who == 'return':
                if role not in RETURN_ROLES:
                    sys.exit(f'opencl_api.txt:{lineno}: unknown return role {role}')
                self.ret_role = (camel(role), idx)
            else:
                if who not in names:
                    sys.exit(f'opencl_api.txt:{lineno}: role for unknown parameter {who}')
                if role not in ROLES:
                    sys.exit(f'opencl_api.txt:{lineno}: unknown role {role}')
                self.roles[who] = (camel(role), idx)
        self.errcode = next((p.name for p in self.params
                             if self.roles.get(p.name, ('',))[0] == 'Errcode'), None)
        for role in ('EventOut', 'Wait', 'Blocking'):
            if sum(1 for r in self.roles.values() if r[0] == role) > 1:
                sys.exit(f'opencl_api.txt:{lineno}: more than one {role} argument')
        for who, (role, idx) in self.roles.items():
            p = self.params[names.index(who)]
            if role in ('InHandles', 'OutHandles') and p.elem == 'Scalar':
                sys.exit(f'opencl_api.txt:{lineno}: {who} is not an array of handles')
            if role == 'Blocking' and p.cls != 'Scalar':
                sys.exit(f'opencl_api.txt:{lineno}: {who} is not a flag')
        if 'twin' in self.flags and not ('EventOut' in (r[0] for r in self.roles.values())
                                         and 'Wait' in (r[0] for r in self.roles.values())):
            sys.exit(f'opencl_api.txt:{lineno}: call:twin needs a wait list and an event output')
        host_roles = {camel(x) for x in HOST_RANGE_ROLES}
        self.host_ranges = sum(1 for r in self.roles.values() if r[0] in host_roles)
        bare_ret = self.ret.replace('const ', '').strip()
        self.ret_cls = ('Pointer' if '*' in bare_ret else HANDLE_TYPES.get(bare_ret, 'Scalar'))
        handles = [p for p in self.params if p.cls in HANDLE_TYPES.values()]
        self.first_handle = handles[0].name if handles else None
        if self.origin == 'ext' and not self.first_handle:
            sys.exit(f'opencl_api.txt:{lineno}: extension {self.name} needs a handle argument '
                     'to find its platform')

    def arg_with(self, role):
        """Index of the parameter with `role` (camel case), -1 when none."""
        return next((i for i, p in enumerate(self.params) if self.roles.get(p.name, ('',))[0] == role), -1)

    def decl_params(self):
        return ', '.join(p.decl for p in self.params) or 'void'

    def arg_names(self):
        return ', '.join(p.name for p in self.params)

    def failure(self):
        """Statements returning an error when the real function cannot be found."""
        code = 'CL_PLATFORM_NOT_FOUND_KHR' if self.name == 'clGetPlatformIDs' else 'CL_INVALID_OPERATION'
        if self.ret == 'void':
            return 'return;'
        if self.ret == 'cl_int':
            return f'return {code};'
        set_err = f'if ({self.errcode}) *{self.errcode} = {code}; ' if self.errcode else ''
        return f'{set_err}return {{}};'


def read_table(path):
    funcs = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line and not line.startswith('#'):
                funcs.append(Function(line, n))
    seen = set()
    for fn in funcs:
        if fn.name in seen:
            sys.exit(f'opencl_api.txt: {fn.name} listed twice')
        seen.add(fn.name)
    return funcs


def gen_table_h(funcs):
    enum = '\n'.join(f'  {f.name},' for f in funcs)
    kinds = '\n'.join(f'  {camel(k)},' for k in KINDS)
    roles = '\n'.join(f'  {camel(r)},' for r in ROLES)
    rroles = '\n'.join(f'  {camel(r)},' for r in RETURN_ROLES)
    host_range_cases = '\n'.join(f'    case ArgRole::{camel(r)}:' for r in HOST_RANGE_ROLES)
    max_host_ranges = max(f.host_ranges for f in funcs)
    classes = '\n'.join(f'  {c},' for c in ['Scalar', 'Pointer', 'Callback'] + list(HANDLE_TYPES.values()))
    return f'''// Generated by api/gen_api.py from api/opencl_api.txt. Do not edit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hetopt::api {{

/// Every intercepted OpenCL function, in table order. Values are stable within a trace format
/// version (the trace stores them); append new functions at the end of their section.
enum class ApiId : uint16_t {{
{enum}
  Count
}};
inline constexpr size_t kApiCount = static_cast<size_t>(ApiId::Count);

enum class ApiKind : uint8_t {{
{kinds}
}};

/// What an argument's C type says it is.
enum class ArgClass : uint8_t {{
{classes}
}};

/// What the table says an argument means (None: a plain input).
enum class ArgRole : uint8_t {{
  None,
{roles}
}};

enum class ReturnRole : uint8_t {{
  None,
{rroles}
}};

struct ArgInfo {{
  const char* name;
  const char* type;  ///< C type as in the header ("" for callbacks)
  ArgClass cls;
  ArgRole role;
  uint8_t numRefs;
  int8_t refs[4];  ///< indices of the parameters the role names, e.g. host_read(size) -> size
  ArgClass elem;   ///< a pointer to handles: their class (in_handles/out_handles arrays); else Scalar
}};

struct ApiInfo {{
  const char* name;
  ApiKind kind;
  bool extension;  ///< obtained through clGetExtensionFunctionAddress*, not exported by the loader
  ArgClass returnClass;
  ReturnRole returnRole;
  uint8_t numReturnRefs;
  int8_t returnRefs[4];
  uint8_t numArgs;
  const ArgInfo* args;
  int8_t eventArg;     ///< the event_out argument (the cl_event* the call fills), -1: none
  int8_t waitArg;      ///< the wait(count) argument, -1: none
  int8_t blockingArg;  ///< the blocking flag argument, -1: none
  bool twinnable;      ///< call:twin, a device command a profiling twin queue may run instead
  uint8_t hostRanges;  ///< arguments with a host-range role (isHostRangeRole); 0: moves none
}};

/// The most host-range arguments one function has (clEnqueueSVMMemcpy: source and destination).
inline constexpr unsigned kMaxHostRanges = {max_host_ranges};

/// Whether an argument with `role` names host memory the call may move, to or from the device
/// (the range: shim/core/host_ranges.h). The one list: trace and optimize mode both ask it.
inline bool isHostRangeRole(ArgRole role) {{
  switch (role) {{
{host_range_cases}
      return true;
    default:
      return false;
  }}
}}

/// Kinds that move data between host and device memory (transfers, maps, SVM copies,
/// migrations): what the trace summary and the analysis count as communication.
inline bool isCommunicationKind(ApiKind k) {{
  return k == ApiKind::H2d || k == ApiKind::D2h || k == ApiKind::Map || k == ApiKind::Unmap ||
         k == ApiKind::SvmCopy || k == ApiKind::Migrate;
}}

/// The table, by ApiId: read it through apiInfo() (inline: the shim asks it several times a call).
extern const ApiInfo kApiTable[kApiCount];
inline const ApiInfo& apiInfo(ApiId id) {{ return kApiTable[static_cast<size_t>(id)]; }}
inline const char* apiName(ApiId id) {{ return apiInfo(id).name; }}
/// Lookup by name; false when the name is not in the table.
bool apiIdByName(std::string_view name, ApiId* out);
const char* apiKindName(ApiKind kind);
const char* argRoleName(ArgRole role);

}}  // namespace hetopt::api
'''


def refs_init(idx):
    vals = (idx + [-1, -1, -1, -1])[:4]
    return f'{len(idx)}, {{{", ".join(str(v) for v in vals)}}}'


def gen_table_cpp(funcs):
    arg_arrays, infos = [], []
    for f in funcs:
        if f.params:
            rows = []
            for p in f.params:
                role, idx = f.roles.get(p.name, ('None', []))
                ctype = getattr(p, 'type', '')
                elem = getattr(p, 'elem', 'Scalar')
                rows.append(f'    {{"{p.name}", "{ctype}", ArgClass::{p.cls}, ArgRole::{role}, {refs_init(idx)}, ArgClass::{elem}}},')
            arg_arrays.append(f'constexpr ArgInfo k_{f.name}[] = {{\n' + '\n'.join(rows) + '\n};')
            args = f'k_{f.name}'
        else:
            args = 'nullptr'
        rr, ridx = f.ret_role
        infos.append(f'    {{"{f.name}", ApiKind::{camel(f.kind)}, {str(f.origin == "ext").lower()}, '
                     f'ArgClass::{f.ret_cls}, ReturnRole::{rr}, {refs_init(ridx)}, {len(f.params)}, {args}, '
                     f'{f.arg_with("EventOut")}, {f.arg_with("Wait")}, {f.arg_with("Blocking")}, '
                     f'{str("twin" in f.flags).lower()}, {f.host_ranges}}},')
    sorted_names = sorted((f.name, i) for i, f in enumerate(funcs))
    by_name = '\n'.join(f'    {{"{n}", ApiId::{n}}},' for n, _ in sorted_names)
    kind_names = ', '.join(f'"{k}"' for k in KINDS)
    role_names = ', '.join(['"none"'] + [f'"{r}"' for r in ROLES])
    return f'''// Generated by api/gen_api.py from api/opencl_api.txt. Do not edit.
#include "api_table.h"

#include <algorithm>
#include <iterator>

namespace hetopt::api {{
namespace {{

{chr(10).join(arg_arrays)}

}}  // namespace

constexpr ApiInfo kApiTable[kApiCount] = {{
{chr(10).join(infos)}
}};
static_assert(kApiTable[kApiCount - 1].name != nullptr, "an entry per ApiId");

namespace {{

struct NameEntry {{
  std::string_view name;
  ApiId id;
}};
constexpr NameEntry kByName[] = {{
{by_name}
}};

constexpr const char* kKindNames[] = {{{kind_names}}};
constexpr const char* kRoleNames[] = {{{role_names}}};

}}  // namespace

bool apiIdByName(std::string_view name, ApiId* out) {{
  auto it = std::lower_bound(std::begin(kByName), std::end(kByName), name,
                             [](const NameEntry& e, std::string_view n) {{ return e.name < n; }});
  if (it == std::end(kByName) || it->name != name) return false;
  *out = it->id;
  return true;
}}

const char* apiKindName(ApiKind kind) {{ return kKindNames[static_cast<size_t>(kind)]; }}
const char* argRoleName(ArgRole role) {{ return kRoleNames[static_cast<size_t>(role)]; }}

}}  // namespace hetopt::api
'''


def gen_wrappers(funcs):
    out = ['// Generated by api/gen_api.py from api/opencl_api.txt. Do not edit.',
           '// Included by shim/opencl_entry.cpp, which provides the helpers used here.', '']
    for f in funcs:
        names = f.arg_names()
        n = max(len(f.params), 1)
        packed = ', '.join(f'toArg({p.name})' for p in f.params) or '0'
        unpacked = ', '.join(f'fromArg<decltype({p.name})>(a[{i}])' for i, p in enumerate(f.params))
        post = ''
        if f.kind == 'ext_lookup':
            plat = 'platform' if f.params[0].name == 'platform' else 'nullptr'
            post = f'  r = static_cast<{f.ret}>(wrapExtensionAddress(func_name, {plat}, r));\n'
        out.append(f'// {f.name}')
        out.append(f'using {f.name}_fn = {f.ret} (CL_API_CALL*)({f.decl_params()});')
        if f.ret == 'void':
            call = f'  next({unpacked});\n'
        else:
            # finish() runs the interceptor's callEnd before returning, so a mode may restore
            # what the application would have seen natively (e.g. an error code).
            call = (f'  {f.ret} r = HETOPT_UNLIKELY(scope.skipped()) ? scope.skippedResult<{f.ret}>() : next({unpacked});\n{post}'
                    f'  return scope.finish(r);\n')
        out.append(f'static {f.ret} invoke_{f.name}({f.name}_fn next{", " if f.params else ""}{", ".join(p.decl for p in f.params)}) {{\n'
                   f'  uint64_t a[{n}] = {{{packed}}};\n'
                   f'  CallScope scope(ApiId::{f.name}, a, {len(f.params)});\n{call}}}')
        if f.origin == 'core':
            out.append(f'extern "C" HETOPT_EXPORT {f.ret} CL_API_CALL {f.name}({f.decl_params()}) {{\n'
                       f'  auto next = reinterpret_cast<{f.name}_fn>(preloadNext(ApiId::{f.name}));\n'
                       f'  if (next == nullptr) {{ {f.failure()} }}\n'
                       f'  if (HETOPT_LIKELY(!interceptActive())) return next({names});\n'
                       f'  return invoke_{f.name}(next{", " if f.params else ""}{names});\n}}')
            out.append(f'static {f.ret} CL_API_CALL layer_{f.name}({f.decl_params()}) {{\n'
                       f'  auto next = s_layerNext.{f.name};\n'
                       f'  if (HETOPT_LIKELY(!interceptActive()) || insideInterceptedCall()) return next({names});\n'
                       f'  return invoke_{f.name}(next{", " if f.params else ""}{names});\n}}')
        else:
            out.append(f'static {f.ret} CL_API_CALL ext_{f.name}({f.decl_params()}) {{\n'
                       f'  auto next = reinterpret_cast<{f.name}_fn>(extensionNext(ApiId::{f.name}, dispatchOf({f.first_handle})));\n'
                       f'  if (next == nullptr) {{ {f.failure()} }}\n'
                       f'  if (!interceptActive() || insideInterceptedCall()) return next({names});\n'
                       f'  return invoke_{f.name}(next{", " if f.params else ""}{names});\n}}')
        out.append('')
    core = [f for f in funcs if f.origin == 'core']
    ext = [f for f in funcs if f.origin == 'ext']
    out.append('// Points every table entry of the layer dispatch at its wrapper; other entries keep the')
    out.append('// next layer\'s function (copied before this call).')
    out.append('static void installLayerWrappers(_cl_icd_dispatch* d) {')
    out += [f'  if (d->{f.name}) d->{f.name} = &layer_{f.name};' for f in core]
    out.append('}')
    out.append('')
    out.append('// The next layer\'s (or the loader\'s) function for an id, for the shim\'s own calls.')
    out.append('static void* layerNextOf(ApiId id) {')
    out.append('  switch (id) {')
    out += [f'    case ApiId::{f.name}: return reinterpret_cast<void*>(s_layerNext.{f.name});' for f in core]
    out.append('    default: return nullptr;')
    out.append('  }')
    out.append('}')
    out.append('')
    out.append('// Extension functions the shim wraps, sorted by name.')
    out.append('static const ExtensionWrapper kExtensionWrappers[] = {')
    out += [f'    {{"{f.name}", ApiId::{f.name}, reinterpret_cast<void*>(&ext_{f.name})}},'
            for f in sorted(ext, key=lambda f: f.name)]
    out.append('};')
    return '\n'.join(out) + '\n'


def gen_version_script(funcs):
    syms = [f.name for f in funcs if f.origin == 'core']
    syms += ['clGetLayerInfo', 'clInitLayer', 'malloc', 'free', 'calloc', 'realloc',
             'posix_memalign', 'aligned_alloc', 'memalign', 'valloc', 'pvalloc',
             'malloc_usable_size', 'mmap', 'mmap64', 'munmap', 'mremap', 'madvise', 'sigaction',
             'signal', '_exit', '_Exit', 'execve', 'execv', 'execvp', 'execvpe', 'fork', 'hetopt_*']
    body = '\n'.join(f'    {s};' for s in syms)
    return ('/* Generated by api/gen_api.py. Only intercepted symbols leave the shim. */\n'
            f'{{\n  global:\n{body}\n  local: *;\n}};\n')


def write_if_changed(path, text):
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return
    with open(path, 'w') as f:
        f.write(text)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    funcs = read_table(sys.argv[1])
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    write_if_changed(os.path.join(outdir, 'api_table.h'), gen_table_h(funcs))
    write_if_changed(os.path.join(outdir, 'api_table.cpp'), gen_table_cpp(funcs))
    write_if_changed(os.path.join(outdir, 'shim_wrappers.inc'), gen_wrappers(funcs))
    write_if_changed(os.path.join(outdir, 'shim_exports.map'), gen_version_script(funcs))


if __name__ == '__main__':
    main()
