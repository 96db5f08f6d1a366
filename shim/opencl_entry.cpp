// SPDX-License-Identifier: MIT
/**
 * @file The shim's OpenCL entry points, on both routes (generated bodies: shim_wrappers.inc): the
 * LD_PRELOAD exports, which programs linked to libOpenCL call first, and an OpenCL layer (loaded
 * through OPENCL_LAYERS), which sees programs that dlopen() libOpenCL; plus the wrappers handed out
 * for extension functions. When both routes see a call, the preload export records it and the
 * layer passes it through (insideInterceptedCall()), so no call is seen twice.
 */
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_icd.h>
#include <CL/cl_layer.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "api_table.h"
#include "shim/core/interceptor.h"
#include "shim/core/state.h"
#include "shim/entry_points.h"

namespace hetopt::shim {
namespace {

using api::ApiId;

template <typename T>
inline uint64_t toArg(T v) {
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<uintptr_t>(v);
  else
    return static_cast<uint64_t>(v);
}

template <typename T>
inline T fromArg(uint64_t v) {
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<T>(static_cast<uintptr_t>(v));
  else
    return static_cast<T>(v);
}

/// Brackets one intercepted call: raises the thread's depth (nested routes and driver-internal
/// allocations pass through) and tells the interceptor before and after. finish() hands the
/// result to callEnd, which may replace it; a void call ends in the destructor.
class CallScope {
 public:
  CallScope(ApiId id, uint64_t* args, unsigned n) : m_interceptor(interceptor()) {
    m_record.id = id;
    m_record.numArgs = n;
    m_record.args = args;
    ++t_depth;
    if (m_interceptor) m_interceptor->callBegin(m_record);
  }
  /// callBegin answered the call itself (CallRecord::skip); its result.
  bool skipped() const { return m_record.skip; }
  template <typename T>
  T skippedResult() const {
    return fromArg<T>(m_record.result);
  }
  template <typename T>
  T finish(T r) {
    m_record.result = toArg(r);
    end();
    return fromArg<T>(m_record.result);
  }
  ~CallScope() {
    end();
    --t_depth;
  }

 private:
  void end() {
    if (m_interceptor && !m_ended) m_interceptor->callEnd(m_record);
    m_ended = true;
  }
  Interceptor* m_interceptor;
  bool m_ended = false;
  CallRecord m_record{};
};

// ---- route 1: LD_PRELOAD -------------------------------------------------------------------
// The real function is the next definition in link order (dlsym RTLD_NEXT), i.e. the ICD loader's.

std::atomic<void*> s_preloadNext[api::kApiCount];

HETOPT_NOINLINE HETOPT_COLD void* resolvePreloadNext(ApiId id) {
  ScopedInternal internal;
  const char* name = api::apiName(id);
  void* fn = dlsym(RTLD_NEXT, name);
  if (!fn) {
    // The program was not linked to libOpenCL but reached our export anyway (e.g. through a
    // library that dlopen()ed it RTLD_GLOBAL after us): ask the loader library directly.
    static void* loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (loader) fn = dlsym(loader, name);
  }
  s_preloadNext[static_cast<size_t>(id)].store(fn, std::memory_order_release);
  return fn;
}

inline void* preloadNext(ApiId id) {
  void* fn = s_preloadNext[static_cast<size_t>(id)].load(std::memory_order_acquire);
  return HETOPT_LIKELY(fn != nullptr) ? fn : resolvePreloadNext(id);
}

// ---- route 2: OpenCL layer -----------------------------------------------------------------
// Installed by clInitLayer (below, with clGetLayerInfo).

_cl_icd_dispatch s_layerNext;   // the next layer's (or the loader's) table
_cl_icd_dispatch s_layerTable;  // ours: the next table with intercepted entries replaced
std::atomic<bool> s_layerReady{false};

std::atomic<bool> s_layerInstalled{false};

// ---- extension functions -------------------------------------------------------------------
// clGetExtensionFunctionAddress[ForPlatform] hand out wrappers; the real function is found per
// platform through the ICD dispatch pointer every handle starts with.

struct ExtensionWrapper {
  const char* name;
  ApiId id;
  void* wrapper;
};

inline const void* dispatchOf(const void* handle) {
  return handle ? *static_cast<const void* const*>(handle) : nullptr;
}

// Real extension functions by (function, platform dispatch table); a few platforms at most.
constexpr int kMaxPlatforms = 8;
struct ExtensionSlot {
  std::atomic<const void*> dispatch{nullptr};
  std::atomic<void*> fn{nullptr};
};
ExtensionSlot s_extensions[api::kApiCount][kMaxPlatforms];

void rememberExtension(ApiId id, const void* dispatch, void* fn) {
  ExtensionSlot* slots = s_extensions[static_cast<size_t>(id)];
  for (int i = 0; i < kMaxPlatforms; ++i) {
    void* cur = slots[i].fn.load(std::memory_order_acquire);
    if (cur && slots[i].dispatch.load(std::memory_order_relaxed) == dispatch) return;
    if (!cur) {
      void* expected = nullptr;
      slots[i].dispatch.store(dispatch, std::memory_order_relaxed);
      if (slots[i].fn.compare_exchange_strong(expected, fn, std::memory_order_acq_rel)) return;
    }
  }
}

void* extensionNext(ApiId id, const void* dispatch) {
  ExtensionSlot* slots = s_extensions[static_cast<size_t>(id)];
  void* only = nullptr;
  int count = 0;
  for (int i = 0; i < kMaxPlatforms; ++i) {
    void* fn = slots[i].fn.load(std::memory_order_acquire);
    if (!fn) break;
    if (slots[i].dispatch.load(std::memory_order_relaxed) == dispatch) return fn;
    only = fn;
    ++count;
  }
  // Objects of one platform normally share its dispatch table; if a driver uses several, the
  // function is still unambiguous when one platform registered it.
  return count == 1 ? only : nullptr;
}

void* wrapExtensionAddress(const char* name, cl_platform_id platform, void* real);

}  // namespace

// Outside the anonymous namespace: the extern "C" exports must be the header's global functions.
#include "shim_wrappers.inc"

void* nextOpenCLFunction(ApiId id) {
  if (s_layerReady.load(std::memory_order_acquire))
    if (void* fn = layerNextOf(id)) return fn;
  return preloadNext(id);
}

namespace {

void* wrapExtensionAddress(const char* name, cl_platform_id platform, void* real) {
  if (!real || !name) return real;
  auto it = std::lower_bound(
      std::begin(kExtensionWrappers), std::end(kExtensionWrappers), name,
      [](const ExtensionWrapper& w, const char* n) { return strcmp(w.name, n) < 0; });
  if (it == std::end(kExtensionWrappers) || strcmp(it->name, name) != 0) return real;
  rememberExtension(it->id, dispatchOf(platform), real);
  return it->wrapper;
}

}  // namespace
}  // namespace hetopt::shim

// ---- the layer's own entry points (Khronos layer API version 100) --------------------------

extern "C" HETOPT_EXPORT cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name,
                                                           size_t param_value_size,
                                                           void* param_value,
                                                           size_t* param_value_size_ret) {
  if (param_name != CL_LAYER_API_VERSION) return CL_INVALID_VALUE;
  cl_layer_api_version version = CL_LAYER_API_VERSION_100;
  if (param_value) {
    if (param_value_size < sizeof version) return CL_INVALID_VALUE;
    memcpy(param_value, &version, sizeof version);
  }
  if (param_value_size_ret) *param_value_size_ret = sizeof version;
  return CL_SUCCESS;
}

extern "C" HETOPT_EXPORT cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
                                                        const _cl_icd_dispatch* target_dispatch,
                                                        cl_uint* num_entries_ret,
                                                        const _cl_icd_dispatch** layer_dispatch) {
  using namespace hetopt::shim;
  constexpr cl_uint kEntries = sizeof(_cl_icd_dispatch) / sizeof(void*);
  if (!target_dispatch || !num_entries_ret || !layer_dispatch) return CL_INVALID_VALUE;
  memset(&s_layerNext, 0, sizeof s_layerNext);
  memcpy(&s_layerNext, target_dispatch, std::min(num_entries, kEntries) * sizeof(void*));
  s_layerTable = s_layerNext;
  installLayerWrappers(&s_layerTable);
  s_layerReady.store(true, std::memory_order_release);
  *layer_dispatch = &s_layerTable;
  *num_entries_ret = kEntries;
  s_layerInstalled.store(true, std::memory_order_release);
  return CL_SUCCESS;
}

// Loaders without layer support (e.g. the CUDA toolkit's libOpenCL.so.1) never call clInitLayer:
// then calls of code that dlopen()s libOpenCL bypass the shim. Returns the loader's path in that
// case (OpenCL was used through the preload route, layers were asked for, none was installed),
// else null. Called at exit to warn once.
extern "C" HETOPT_EXPORT const char* hetopt_shim_layer_missing() {
  using namespace hetopt::shim;
  const char* layers = getenv("OPENCL_LAYERS");
  if (!layers || !*layers || s_layerInstalled.load(std::memory_order_acquire)) return nullptr;
  void* used = s_preloadNext[static_cast<size_t>(hetopt::api::ApiId::clGetPlatformIDs)].load();
  if (!used) return nullptr;
  Dl_info info{};
  return dladdr(used, &info) && info.dli_fname ? info.dli_fname : "the OpenCL loader";
}
