// SPDX-License-Identifier: MIT
/**
 * @file The `--json` outputs of `hetopt devices` and `hetopt characterize --show`: what the text
 * says, as one JSON object for tools (fields documented in each command's --help and README).
 * Written with common/json_writer.
 */
#pragma once
#include <string>
#include <vector>

#include "characterize/model.h"
#include "cli/icd_doctor.h"
#include "common/cl_select.h"

namespace hetopt::cli {

/// `hetopt devices --json`: every device, which one hetopt picks (`chosen` null: none), the
/// listing's error and the ICD diagnosis.
std::string devicesJson(const std::vector<ClDevice>& devices, const ClDevice* chosen,
                        const std::string& error, const std::vector<IcdFinding>& findings);

/// `hetopt characterize --show --json`: the stored runs, each with its policies, fits, decisions
/// and measured points (statistics only, not every repetition).
std::string characterizationJson(const std::string& dbPath,
                                 const std::vector<const characterize::CharacterizationRun*>& runs);

}  // namespace hetopt::cli
