// SPDX-License-Identifier: MIT
/** @file The analyzer's name for hetopt's one JSON writer (common/json_writer.h). */
#pragma once
#include "common/json_writer.h"

namespace hetopt::analyzer {
using hetopt::JsonWriter;
}  // namespace hetopt::analyzer
