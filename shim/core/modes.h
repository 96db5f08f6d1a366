// SPDX-License-Identifier: MIT
/**
 * @file The modes' factories: what activation (lifecycle.cpp) needs of a mode, and no more. Each
 * is defined beside its mode's members (count_interceptor.cpp, trace_interceptor.cpp,
 * optimize_interceptor.cpp).
 */
#pragma once

namespace hetopt::shim {

class Interceptor;

/// HETOPT_MODE=count: call counts and allocation sites at exit.
Interceptor* makeCountInterceptor();
/// HETOPT_MODE=trace; null when the trace file cannot be written (it said why).
Interceptor* makeTraceInterceptor();
/// HETOPT_MODE=optimize; null when there is nothing to optimize (it said why).
Interceptor* makeOptimizeInterceptor();

}  // namespace hetopt::shim
