// SPDX-License-Identifier: MIT
/**
 * @file When optimize mode's thread may call into the OpenCL driver before the program does. A
 * forked child cannot use a driver its parent initialized (PoCL's hangs, NVIDIA's calls fail),
 * while natively a child whose parent made no OpenCL call starts a driver of its own. So the
 * driver is started early, on hetopt's thread, only in a process that cannot fork; in one that can
 * (the plan says `driver late`, or a loaded module imports fork: common/elf_imports.h), the driver
 * waits for the program's first OpenCL call and only its fork-safe part comes early.
 */
#pragma once
#include <cstdint>
#include <string>

namespace hetopt::shim {

/// A fork() before hetopt's thread began calls its start-up off; one while it is inside the driver
/// or the loader waits for it (optimize_fork.cpp). Plain state: its owner (OptimizeInterceptor,
/// through Preparation) reads and changes it under its state mutex only.
class DriverStart {
 public:
  enum class Why : uint8_t {
    Early,    ///< this process cannot fork: hetopt's thread starts the driver at once
    Plan,     ///< the plan says `driver late` (the program forked when traced or optimized)
    CanFork,  ///< a module loaded at start-up imports fork
    Forked,   ///< the program forked before hetopt's thread started the driver
  };

  /// Decided once, at start-up: `planLate` is the plan's `driver late`, `forkImporter` the first
  /// loaded module that imports fork (empty: none).
  void decide(bool planLate, std::string forkImporter);
  bool late() const { return m_why != Why::Early; }
  Why why() const { return m_why; }
  /// For the log: "early", or "late: ..." and why.
  std::string describe() const;

  /// hetopt's early thread, about to make its first driver call: false (it does nothing) when the
  /// driver is late, a fork() having come first included. From true on, the driver is started.
  bool enterDriver();
  /// The thread that loads the vendor libraries (late driver only), about to: false when a fork()
  /// came first. endLoading() when done.
  bool beginLoading();
  void endLoading() { m_loading = false; }
  /// hetopt's driver thread is inside the driver (it enters and leaves it more than once).
  void setInDriver(bool inDriver) { m_inDriver = inDriver; }
  /// Inside the driver or loading its libraries now: fork() and exit() wait while this is true.
  bool busy() const { return m_inDriver || m_loading; }
  /// Whether hetopt's thread started the driver before the program's first OpenCL call: a forked
  /// child then inherits a driver it cannot use.
  bool driverStarted() const { return m_driverStarted; }

  /// The program calls fork() before its first OpenCL call: true when fork() must wait until
  /// busy() is false; else whatever hetopt's thread has not begun is called off for this process.
  bool forkMustWait();
  /// In the child: no thread of hetopt's is there.
  void forkChild() { m_inDriver = m_loading = false; }

 private:
  Why m_why = Why::Early;
  std::string m_forkImporter;
  bool m_begun = false;      ///< hetopt's thread began (the driver or the loading)
  bool m_calledOff = false;  ///< a fork() came before it began
  bool m_inDriver = false;   ///< the driver thread, inside the driver
  bool m_loading = false;    ///< the loading thread, inside dlopen()
  bool m_driverStarted = false;
};

/// The driver's fork-safe part: the OpenCL implementations that the vendors directory's ICD files
/// name, and $OCL_ICD_FILENAMES (the Khronos loader's; ocl-icd reads only the ICD files, and one
/// named there is then loaded for nothing), loaded with dlopen() and never called. Their pages are
/// mapped and relocated and their constructors run (PoCL's starts no thread; CUDA's driver does
/// nothing before its first call); the loader's own dlopen() later finds them loaded. The handles
/// are kept. How many could be loaded.
unsigned loadVendorLibraries();

}  // namespace hetopt::shim
