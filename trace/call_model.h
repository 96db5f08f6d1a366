// SPDX-License-Identifier: MIT
/**
 * @file The call model: one OpenCL call (its arguments as the program passed them, its result)
 * plus its entry in the generated API table becomes a leaf with its references, each naming an
 * object and the SSA version the call used or defined. The rule for a reference lives here once
 * (makeRef, makeHostRef): the recorder's allocation leaves and the shim's OpenCL leaves both go
 * through it. No driver is needed (CallModelHooks), and everything here runs with the recorder's
 * lock held.
 */
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "api_table.h"
#include "trace/compressor.h"
#include "trace/objects.h"
#include "trace/recorder.h"

namespace hetopt::trace {

/// A reference of argument `arg` (index, kRefArgReturn or kRefArgBound) to `obj` with RefFlag
/// `flags`: kRefWrite or kRefCreate define the object's next version, anything else names the
/// current one.
inline Ref makeRef(ObjectTable& objects, ObjectId obj, uint8_t arg, uint8_t flags) {
  Ref r;
  r.obj = obj;
  r.arg = arg;
  r.flags = flags;
  r.vFirst = r.vLast =
      (flags & (kRefWrite | kRefCreate)) ? objects.bumpVersion(obj) : objects.version(obj);
  return r;
}
/// A reference to host memory: `bytes` moved within [target.offset, target.offset + span) of the
/// object `target` resolved to. Write and Mapped (device to host, a map) define a new version of
/// the host memory; Read, Wrap and Unmap name the current one.
Ref makeHostRef(ObjectTable& objects, const HostTarget& target, uint8_t arg, HostAccess access,
                uint64_t bytes, uint64_t span);

/// One intercepted call as it ended, as the program made it.
struct CallView {
  api::ApiId id;
  const uint64_t* args;  ///< widened to 64 bits in table order
  uint64_t result;
  const void* source = nullptr;  ///< the caller's own record of the call, for its hooks
};

/// What a call achieved: the status the trace records and whether it succeeded.
struct CallOutcome {
  int64_t status = 0;  ///< the return code, *errcode_ret, or CL_INVALID_VALUE for a null handle
  bool ok = false;
};

/// The SVM/USM allocation `call` made (ReturnRole::SvmNew: clSVMAlloc, clHostMemAllocINTEL, ...):
/// its start (the result) and *bytes; 0 for any other call or a failed one. The trace makes it an
/// Svm object; optimize mode remembers it (shim/core/svm_ranges.h): the same memory either way.
inline uint64_t svmAllocated(const api::ApiInfo& info, const CallView& call, uint64_t* bytes) {
  if (info.returnRole != api::ReturnRole::SvmNew || !call.result || info.numReturnRefs < 1)
    return 0;
  const int k = info.returnRefs[0];
  *bytes = k >= 0 && static_cast<unsigned>(k) < info.numArgs ? call.args[k] : 0;
  return call.result;
}
/// The SVM/USM allocation `call` frees at once (clSVMFree, clMemFreeINTEL: the pointer after the
/// context), 0 for any other call. clEnqueueSVMFree's list is freed later, by the queue.
inline uint64_t svmFreed(const api::ApiInfo& info, const CallView& call) {
  return info.kind == api::ApiKind::SvmFree && info.numArgs == 2 ? call.args[1] : 0;
}

/// The host memory one pointer argument moves.
struct HostSpan {
  uint64_t ptr = 0;                      ///< first byte touched
  uint64_t bytes = 0;                    ///< bytes moved
  uint64_t span = 0;                     ///< extent from ptr holding every byte touched (pitches)
  HostAccess access = HostAccess::Read;  ///< Read, Write or Wrap
};

/// What the model asks of the side that sees the driver; null members answer "nothing". Only
/// what only the driver can say (the host memory an image transfer spans, the name of a device)
/// comes through here, so tests and bench/record_cost drive the model with synthetic calls.
struct CallModelHooks {
  /// The host memory argument `arg` of `call` moves (from the API table's roles; image element
  /// sizes may need the driver); false when it moves none.
  bool (*hostSpan)(const CallView& call, unsigned arg, HostSpan* out) = nullptr;
  /// A label for a platform or device handle seen the first time (its name); false: none.
  bool (*label)(ObjectKind kind, uint64_t handle, char* out, size_t size) = nullptr;
};

class CallModel {
 public:
  static constexpr size_t kMaxArrayRefs = 16;  ///< handles/pointers read from one array argument

  explicit CallModel(CallModelHooks hooks = {}) : m_hooks(hooks) {}

  /// The status and success of `call` (needs no lock).
  static CallOutcome outcome(const CallView& call);

  /// Fills `leaf` (empty, e.g. Recorder::scratchLeaf) with the call's function, host time,
  /// arguments, status and references, and updates the recorder's object model: handles created
  /// or first seen, SVM allocations made or freed, kernel argument bindings. Recorder lock held.
  void build(Recorder& recorder, const CallView& call, const CallOutcome& outcome, uint64_t hostNs,
             Leaf& leaf);

 private:
  /// A handle argument or array element: the object it names, labelled when first seen.
  ObjectId seen(Recorder& recorder, ObjectKind kind, uint64_t handle, bool* created);
  void pointerArg(Recorder& recorder, const api::ApiInfo& info, const CallView& call,
                  const CallOutcome& outcome, unsigned i, ObjectId kernel, Leaf& leaf);
  void bindKernelArg(ObjectId kernel, uint64_t index, ObjectId bound);
  void returned(Recorder& recorder, const api::ApiInfo& info, const CallView& call, Leaf& leaf);

  CallModelHooks m_hooks;
  std::map<ObjectId, std::vector<ObjectId>> m_kernelArgs;  ///< what each kernel's arguments name
};

/// The kind of tracked object a handle of class `cls` names; false for scalars, pointers,
/// callbacks and events (events are not tracked objects).
inline bool objectKindOf(api::ArgClass cls, ObjectKind* kind) {
  switch (cls) {
    case api::ArgClass::Platform:
      *kind = ObjectKind::Platform;
      return true;
    case api::ArgClass::Device:
      *kind = ObjectKind::Device;
      return true;
    case api::ArgClass::Context:
      *kind = ObjectKind::Context;
      return true;
    case api::ArgClass::Queue:
      *kind = ObjectKind::Queue;
      return true;
    case api::ArgClass::Mem:
      *kind = ObjectKind::Mem;
      return true;
    case api::ArgClass::Program:
      *kind = ObjectKind::Program;
      return true;
    case api::ArgClass::Kernel:
      *kind = ObjectKind::Kernel;
      return true;
    case api::ArgClass::Sampler:
      *kind = ObjectKind::Sampler;
      return true;
    default:
      return false;
  }
}

}  // namespace hetopt::trace
