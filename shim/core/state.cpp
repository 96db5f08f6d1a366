// SPDX-License-Identifier: MIT
/** @file The shim's shared state; see state.h.
 * The globals every mode and entry point reads: constinit, so no constructor order matters. */
#include "shim/core/state.h"

namespace hetopt::shim {

std::atomic<Interceptor*> g_interceptor{nullptr};
constinit Watch g_watch;
constinit HETOPT_TLS unsigned t_depth = 0;
constinit HETOPT_TLS bool t_inSignalSnapshot = false;

}  // namespace hetopt::shim
