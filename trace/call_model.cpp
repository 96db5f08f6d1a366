// SPDX-License-Identifier: MIT
/** @file Calls to leaves; see call_model.h.
 * A call's outcome, its handles seen and created, pointer arguments, returned objects. */
#include "trace/call_model.h"

#include <CL/cl.h>

#include <algorithm>
#include <cstring>

namespace hetopt::trace {

using api::ApiId;
using api::ArgClass;
using api::ArgRole;

namespace {
/// Argument `k` of a call of `info` (an index the table names), 0 when there is none.
uint64_t argOf(const api::ApiInfo& info, const CallView& call, int k) {
  return k >= 0 && static_cast<unsigned>(k) < info.numArgs ? call.args[k] : 0;
}
}  // namespace

Ref makeHostRef(ObjectTable& objects, const HostTarget& target, uint8_t arg, HostAccess access,
                uint64_t bytes, uint64_t span) {
  const bool defines = access == HostAccess::Write || access == HostAccess::Mapped;
  Ref r = makeRef(objects, target.obj, arg,
                  static_cast<uint8_t>(kRefHost | (defines ? kRefWrite : kRefRead)));
  r.access = access;
  r.offMin = target.offset;
  r.endMax = target.offset + span;
  r.bytes = bytes;
  return r;
}

CallOutcome CallModel::outcome(const CallView& call) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  CallOutcome o;
  if (info.returnClass == ArgClass::Scalar) {
    o.status = static_cast<cl_int>(call.result);
  } else if (info.returnClass != ArgClass::Callback && info.numArgs > 0) {
    o.status = call.result ? 0 : CL_INVALID_VALUE;
    for (unsigned i = 0; i < info.numArgs; ++i)
      if (info.args[i].role == ArgRole::Errcode && call.args[i])
        o.status = *reinterpret_cast<const cl_int*>(call.args[i]);
  }
  o.ok = o.status == CL_SUCCESS;
  // A plain pointer result (an extension function's address): null is an answer, not an error.
  if (info.returnRole == api::ReturnRole::None && info.returnClass == ArgClass::Pointer)
    o.status = 0;
  return o;
}

ObjectId CallModel::seen(Recorder& recorder, ObjectKind kind, uint64_t handle, bool* created) {
  const ObjectId obj = recorder.handle(kind, handle, created);
  if (!*created || !m_hooks.label) return obj;
  char name[256] = {};
  if (m_hooks.label(kind, handle, name, sizeof name - 1) && name[0]) {
    ObjectTable& objects = recorder.objects();
    objects.info(obj).fields |= kObjLabel;
    objects.info(obj).label = name;
    objects.touch(obj);
  }
  return obj;
}

void CallModel::bindKernelArg(ObjectId kernel, uint64_t index, ObjectId bound) {
  if (index >= 256) return;
  auto& args = m_kernelArgs[kernel];
  if (args.size() <= index) args.resize(index + 1);
  args[index] = bound;
}

void CallModel::build(Recorder& recorder, const CallView& call, const CallOutcome& outcome,
                      uint64_t hostNs, Leaf& leaf) {
  const api::ApiInfo& info = api::apiInfo(call.id);
  ObjectTable& objects = recorder.objects();
  const bool ok = outcome.ok;
  leaf.code = static_cast<uint16_t>(call.id);
  leaf.host.add(hostNs);
  leaf.args.resize(info.numArgs);
  for (unsigned i = 0; i < info.numArgs; ++i) {
    const uint64_t v = call.args[i];
    leaf.args[i] = ArgAgg::of(info.args[i].cls == ArgClass::Scalar ? v : (v != 0));
  }
  leaf.result = ArgAgg::of(static_cast<uint32_t>(outcome.status));

  ObjectId kernel = kNoObject;
  for (unsigned i = 0; i < info.numArgs; ++i) {
    const api::ArgInfo& a = info.args[i];
    const uint64_t v = call.args[i];
    ObjectKind kind;
    if (objectKindOf(a.cls, &kind)) {
      if (!v) continue;
      bool created = false;
      const ObjectId obj = seen(recorder, kind, v, &created);
      uint8_t flags = kRefRead;
      if (ok && a.role == ArgRole::Writes) flags = kRefWrite;
      if (a.role == ArgRole::Map && ok &&
          (argOf(info, call, a.refs[0]) & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)))
        flags = kRefWrite;
      if (a.role == ArgRole::Launch ||
          (a.cls == ArgClass::Kernel && call.id != ApiId::clCreateKernel))
        kernel = obj;
      leaf.refs.push_back(makeRef(objects, obj, static_cast<uint8_t>(i), flags));
      continue;
    }
    if (a.cls == ArgClass::Pointer && v) pointerArg(recorder, info, call, outcome, i, kernel, leaf);
  }
  // SVM/USM pointers bound as kernel arguments (the value is the pointer itself).
  if (info.kind == api::ApiKind::SetArg && info.numArgs == 3 && kernel && ok) {
    const HostTarget t = recorder.resolveHost(call.args[2], 1);
    if (t.obj) leaf.refs.push_back(makeRef(objects, t.obj, 2, kRefRead));
    bindKernelArg(kernel, call.args[1], t.obj);
  }
  // A launch writes every buffer bound to the kernel.
  if (info.kind == api::ApiKind::Launch && kernel) {
    auto it = m_kernelArgs.find(kernel);
    if (it != m_kernelArgs.end())
      for (ObjectId b : it->second)
        if (b) leaf.refs.push_back(makeRef(objects, b, kRefArgBound, ok ? kRefWrite : kRefRead));
  }
  if (const uint64_t freed = svmFreed(info, call)) {
    const ObjectId gone = recorder.removeSvm(freed);
    if (gone) leaf.refs.push_back(makeRef(objects, gone, 1, kRefDestroy));
  }
  returned(recorder, info, call, leaf);
}

void CallModel::pointerArg(Recorder& recorder, const api::ApiInfo& info, const CallView& call,
                           const CallOutcome& outcome, unsigned i, ObjectId kernel, Leaf& leaf) {
  const api::ArgInfo& a = info.args[i];
  ObjectTable& objects = recorder.objects();
  const uint64_t v = call.args[i];
  const auto idx = static_cast<uint8_t>(i);
  auto arg = [&](int k) { return argOf(info, call, k); };
  const auto* list = reinterpret_cast<const uint64_t*>(v);
  ObjectKind elem;
  if (api::isHostRangeRole(a.role)) {
    HostSpan s;
    if (!m_hooks.hostSpan || !m_hooks.hostSpan(call, i, &s) || !s.ptr) return;
    const HostTarget t = recorder.resolveHost(s.ptr, std::max<uint64_t>(s.span, 1));
    if (t.obj)
      leaf.refs.push_back(makeHostRef(objects, t, idx, s.access, outcome.ok ? s.bytes : 0, s.span));
    return;
  }
  switch (a.role) {
    case ArgRole::SvmList:
      for (uint64_t k = 0, n = std::min<uint64_t>(arg(a.refs[0]), kMaxArrayRefs); k < n; ++k) {
        const HostTarget t = recorder.resolveHost(list[k], 1);
        if (t.obj) leaf.refs.push_back(makeRef(objects, t.obj, idx, kRefRead));
      }
      break;
    case ArgRole::InHandles:
      if (!objectKindOf(a.elem, &elem)) break;
      for (uint64_t k = 0, n = std::min<uint64_t>(arg(a.refs[0]), kMaxArrayRefs); k < n; ++k)
        if (list[k])
          leaf.refs.push_back(makeRef(objects, recorder.handle(elem, list[k]), idx, kRefRead));
      break;
    case ArgRole::OutHandles: {
      if (!outcome.ok || !objectKindOf(a.elem, &elem)) break;
      uint64_t n = arg(a.refs[0]);
      // The count the driver filled in, where the call reports it (num_platforms, num_devices).
      if (a.numRefs >= 2 && arg(a.refs[1]))
        n = std::min<uint64_t>(n, *reinterpret_cast<const cl_uint*>(arg(a.refs[1])));
      n = std::min<uint64_t>(n, kMaxArrayRefs);
      for (uint64_t k = 0; k < n; ++k) {
        if (!list[k]) continue;
        if (info.kind == api::ApiKind::CreateKernel) {
          leaf.refs.push_back(
              makeRef(objects, recorder.createHandle(elem, list[k]), idx, kRefCreate));
        } else {
          bool created = false;
          const ObjectId obj = seen(recorder, elem, list[k], &created);
          leaf.refs.push_back(makeRef(objects, obj, idx, created ? kRefCreate : kRefRead));
        }
      }
      break;
    }
    case ArgRole::MappedPtr: {
      const HostTarget t = recorder.resolveHost(v, 1);
      if (t.obj) leaf.refs.push_back(makeHostRef(objects, t, idx, HostAccess::Unmap, 0, 1));
      break;
    }
    case ArgRole::ArgValue: {
      // clSetKernelArg with a cl_mem (or sampler) value: the kernel now uses that object.
      ObjectId bound = kNoObject;
      if (arg(a.refs[0]) == sizeof(void*)) {
        uint64_t handle;
        memcpy(&handle, reinterpret_cast<const void*>(v), sizeof handle);
        const ObjectId obj = handle ? recorder.findHandle(handle) : kNoObject;
        if (obj &&
            (objects.kind(obj) == ObjectKind::Mem || objects.kind(obj) == ObjectKind::Sampler))
          bound = obj;
      }
      if (bound) leaf.refs.push_back(makeRef(objects, bound, idx, kRefRead));
      if (outcome.ok && kernel) bindKernelArg(kernel, arg(1), bound);
      break;
    }
    default:
      break;
  }
}

void CallModel::returned(Recorder& recorder, const api::ApiInfo& info, const CallView& call,
                         Leaf& leaf) {
  ObjectTable& objects = recorder.objects();
  if (!call.result) return;
  auto arg = [&](int k) { return argOf(info, call, k); };
  switch (info.returnRole) {
    case api::ReturnRole::New: {
      ObjectKind kind;
      if (!objectKindOf(info.returnClass, &kind)) break;
      const ObjectId obj = recorder.createHandle(kind, call.result);
      if (call.id == ApiId::clCreateKernel && call.args[1]) {
        const auto* name = reinterpret_cast<const char*>(call.args[1]);
        objects.info(obj).fields |= kObjLabel;
        objects.info(obj).label.assign(name, strnlen(name, 255));
      }
      // The object's related one: the host memory it wraps, or its parent buffer.
      for (const Ref& r : leaf.refs)
        if (r.access == HostAccess::Wrap || (call.id == ApiId::clCreateSubBuffer && r.arg == 0)) {
          objects.info(obj).fields |= kObjParent;
          objects.info(obj).related = r.obj;
        }
      leaf.refs.push_back(makeRef(objects, obj, kRefArgReturn, kRefCreate));
      break;
    }
    case api::ReturnRole::SvmNew: {
      uint64_t bytes = 0;
      const uint64_t start = svmAllocated(info, call, &bytes);
      const ObjectId svm = recorder.addSvm(start, bytes);
      leaf.refs.push_back(makeRef(objects, svm, kRefArgReturn, kRefCreate));
      break;
    }
    case api::ReturnRole::Mapped:
    case api::ReturnRole::MappedImage: {
      const uint64_t bytes =
          info.returnRole == api::ReturnRole::Mapped ? arg(info.returnRefs[0]) : 0;
      const uint64_t span = std::max<uint64_t>(bytes, 1);
      const HostTarget t = recorder.resolveHost(call.result, span);
      if (t.obj)
        leaf.refs.push_back(
            makeHostRef(objects, t, kRefArgReturn, HostAccess::Mapped, bytes, span));
      break;
    }
    default:
      break;
  }
}

}  // namespace hetopt::trace
