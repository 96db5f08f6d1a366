// SPDX-License-Identifier: MIT
/** @file A program whose fork comes from a library it needs (elf_imports_lib.cpp):
 * elf_imports_test. */
extern "C" int hetopt_test_fork_and_wait();

int main() { return hetopt_test_fork_and_wait(); }
