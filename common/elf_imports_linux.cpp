// SPDX-License-Identifier: MIT
/** @file Imports of ELF images, loaded or on disk; see elf_imports.h.
 * Images in memory or in a file, their dynamic section and undefined symbols; DT_NEEDED search. */
#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <set>
#include <vector>

#include "common/elf_imports.h"

namespace hetopt {
namespace {

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);
using Dyn = ElfW(Dyn);
using Sym = ElfW(Sym);

#if defined(__x86_64__)
constexpr unsigned kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr unsigned kMachine = EM_PPC64;
#else
constexpr unsigned kMachine = EM_NONE;  // not checked
#endif
constexpr unsigned char kClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;

// Bounds a malformed image cannot make us exceed.
constexpr uint64_t kMaxDynamicEntries = 4096;
constexpr uint64_t kMaxSymbols = 1 << 24;
constexpr uint64_t kMaxCached = 64 << 20;  ///< of a file's symbols or strings read at once
constexpr size_t kMaxObjects = 512;        ///< of a program's closure
constexpr uint64_t kNone = UINT64_MAX;

/// What a dynamic section says. Addresses are the image's own (virtual addresses; in memory, the
/// loader may have relocated them to absolute ones: the image's read() takes either).
struct Dynamic {
  uint64_t strtab = 0, strsz = 0, symtab = 0, syment = sizeof(Sym), hash = 0, gnuHash = 0;
  uint64_t rpath = kNone, runpath = kNone;  ///< string offsets
};

/// A module loaded in this process: reads go to memory, inside its readable PT_LOAD segments only.
class MemoryImage {
 public:
  explicit MemoryImage(const dl_phdr_info* info) : m_info(info) {
    for (int i = 0; i < info->dlpi_phnum; ++i)
      if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) m_dynamic = &info->dlpi_phdr[i];
  }
  bool hasDynamic() const { return m_dynamic != nullptr; }
  uint64_t dynamicAddr() const { return m_dynamic->p_vaddr; }
  uint64_t dynamicSize() const { return m_dynamic->p_memsz; }
  void prefetch(uint64_t, uint64_t) {}
  bool read(uint64_t addr, void* out, size_t n) const {
    // glibc relocates the dynamic section's pointers in place; the vdso's are left as linked.
    const uint64_t bias = m_info->dlpi_addr;
    const uint64_t at = addr < bias ? addr + bias : addr;
    if (at + n < at) return false;
    for (int i = 0; i < m_info->dlpi_phnum; ++i) {
      const Phdr& ph = m_info->dlpi_phdr[i];
      if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_R)) continue;
      const uint64_t lo = bias + ph.p_vaddr, hi = lo + ph.p_memsz;
      if (at >= lo && at + n <= hi) {
        memcpy(out, reinterpret_cast<const void*>(static_cast<uintptr_t>(at)), n);
        return true;
      }
    }
    return false;
  }

 private:
  const dl_phdr_info* m_info;
  const Phdr* m_dynamic = nullptr;
};

/// An ELF file of this machine's kind, read by offset; a virtual address maps to the file through
/// the PT_LOAD segment holding it. prefetch() reads a range once (the symbols, the strings).
class FileImage {
 public:
  FileImage() = default;
  FileImage(const FileImage&) = delete;
  FileImage& operator=(const FileImage&) = delete;
  ~FileImage() {
    if (m_fd >= 0) close(m_fd);
  }
  /// False with *why when `path` cannot be read or is no ELF file of this machine's kind.
  bool open(const std::string& path, std::string* why) {
    Ehdr eh;
    if (!openHeader(path, &eh, why)) return false;
    if (eh.e_phentsize != sizeof(Phdr) || eh.e_phnum > 512)
      return *why = path + ": bad program headers", false;
    std::vector<Phdr> headers(eh.e_phnum);
    if (!pread(eh.e_phoff, headers.data(), headers.size() * sizeof(Phdr)))
      return *why = path + ": truncated", false;
    for (const Phdr& ph : headers) {
      if (ph.p_type == PT_LOAD) m_loads.push_back(ph);
      if (ph.p_type == PT_DYNAMIC) m_dynamic = ph;
    }
    return true;
  }
  /// The file's device and inode: one library reached by two names is read once.
  std::pair<uint64_t, uint64_t> id() const { return {m_dev, m_inode}; }
  bool hasDynamic() const { return m_dynamic.p_type == PT_DYNAMIC; }
  uint64_t dynamicAddr() const { return m_dynamic.p_vaddr; }
  uint64_t dynamicSize() const { return m_dynamic.p_filesz; }
  void prefetch(uint64_t addr, uint64_t n) {
    if (n == 0 || n > kMaxCached) return;
    for (const Cached& c : m_cache)
      if (addr >= c.addr && addr + n >= addr && addr + n <= c.addr + c.size) return;
    Cached c{addr, std::make_unique_for_overwrite<char[]>(n), n};
    if (readMapped(addr, c.bytes.get(), n)) m_cache.push_back(std::move(c));
  }
  bool read(uint64_t addr, void* out, size_t n) const {
    for (const Cached& c : m_cache)
      if (addr >= c.addr && addr + n >= addr && addr + n <= c.addr + c.size) {
        memcpy(out, c.bytes.get() + (addr - c.addr), n);
        return true;
      }
    return readMapped(addr, out, n);
  }

 private:
  struct Cached {
    uint64_t addr;
    std::unique_ptr<char[]> bytes;
    uint64_t size;
  };
  bool openHeader(const std::string& path, Ehdr* eh, std::string* why) {
    // O_NONBLOCK: a FIFO named as a library must not stop `hetopt run` (regular files ignore it).
    m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (m_fd < 0 || fstat(m_fd, &st) != 0 || !S_ISREG(st.st_mode))
      return *why = path + ": " + (m_fd < 0 ? strerror(errno) : "not a regular file"), false;
    m_size = static_cast<uint64_t>(st.st_size);
    m_dev = st.st_dev;
    m_inode = st.st_ino;
    if (!pread(0, eh, sizeof *eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
      return *why = path + " is not an ELF file", false;
    if (eh->e_ident[EI_CLASS] != kClass || (kMachine != EM_NONE && eh->e_machine != kMachine))
      return *why = path + " is an ELF file for another machine", false;
    return true;
  }
  bool pread(uint64_t off, void* out, size_t n) const {
    if (off > m_size || m_size - off < n) return false;
    for (size_t got = 0; got < n;) {
      const ssize_t r =
          ::pread(m_fd, static_cast<char*>(out) + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }
  bool readMapped(uint64_t addr, void* out, size_t n) const {
    for (const Phdr& ph : m_loads)
      if (addr >= ph.p_vaddr && addr + n >= addr && addr + n <= ph.p_vaddr + ph.p_filesz)
        return pread(ph.p_offset + (addr - ph.p_vaddr), out, n);
    return false;
  }

  int m_fd = -1;
  uint64_t m_size = 0, m_dev = 0, m_inode = 0;
  std::vector<Phdr> m_loads;
  Phdr m_dynamic{};
  std::vector<Cached> m_cache;
};

/// The dynamic section's entries this file needs; DT_NEEDED string offsets into `needed` when
/// given.
template <class Image>
bool readDynamic(Image& img, Dynamic* d, std::vector<uint64_t>* needed) {
  if (!img.hasDynamic()) return false;
  img.prefetch(img.dynamicAddr(),
               std::min<uint64_t>(img.dynamicSize(), kMaxDynamicEntries * sizeof(Dyn)));
  for (uint64_t i = 0; i < kMaxDynamicEntries && (i + 1) * sizeof(Dyn) <= img.dynamicSize(); ++i) {
    Dyn e;
    if (!img.read(img.dynamicAddr() + i * sizeof e, &e, sizeof e)) return false;
    const uint64_t v = e.d_un.d_val;
    switch (e.d_tag) {
      case DT_NULL:
        return d->strtab && d->symtab;
      case DT_STRTAB:
        d->strtab = v;
        break;
      case DT_STRSZ:
        d->strsz = v;
        break;
      case DT_SYMTAB:
        d->symtab = v;
        break;
      case DT_SYMENT:
        d->syment = v;
        break;
      case DT_HASH:
        d->hash = v;
        break;
      case DT_GNU_HASH:
        d->gnuHash = v;
        break;
      case DT_RPATH:
        d->rpath = v;
        break;
      case DT_RUNPATH:
        d->runpath = v;
        break;
      case DT_NEEDED:
        if (needed) needed->push_back(v);
        break;
      default:
        break;
    }
  }
  return d->strtab && d->symtab;
}

/// One past the last symbol that may be undefined. GNU hash tables hold only defined symbols, and
/// linkers put every other one before the table's first (symoffset); a SysV table counts them all.
template <class Image>
uint64_t undefinedSymbolsEnd(const Image& img, const Dynamic& d) {
  uint32_t h[2];
  if (d.gnuHash && img.read(d.gnuHash, h, sizeof h)) return h[1] < kMaxSymbols ? h[1] : 0;
  if (d.hash && img.read(d.hash, h, sizeof h)) return h[1] < kMaxSymbols ? h[1] : 0;
  return 0;
}

template <class Image>
bool stringAt(const Image& img, const Dynamic& d, uint64_t offset, std::string* out) {
  out->clear();
  for (uint64_t i = offset; i < d.strsz; ++i) {
    char c;
    if (!img.read(d.strtab + i, &c, 1)) return false;
    if (!c) return true;
    *out += c;
  }
  return false;
}

template <class Image>
bool importsAny(Image& img, const Dynamic& d, std::span<const char* const> names) {
  size_t longest = 0;  // with its NUL
  for (const char* name : names) longest = std::max(longest, strlen(name) + 1);
  char got[64];
  if (d.syment != sizeof(Sym) || longest > sizeof got) return false;
  const uint64_t end = undefinedSymbolsEnd(img, d);
  img.prefetch(d.symtab, end * sizeof(Sym));
  img.prefetch(d.strtab, d.strsz);
  for (uint64_t i = 1; i < end; ++i) {
    Sym s;
    if (!img.read(d.symtab + i * sizeof s, &s, sizeof s)) return false;
    const unsigned bind = ELF64_ST_BIND(s.st_info);
    if (s.st_shndx != SHN_UNDEF || s.st_name == 0 || (bind != STB_GLOBAL && bind != STB_WEAK))
      continue;
    if (s.st_name >= d.strsz) continue;
    // One read per symbol, as much of its name as the longest wanted one (less at the table's end).
    const size_t n = static_cast<size_t>(std::min<uint64_t>(longest, d.strsz - s.st_name));
    if (!img.read(d.strtab + s.st_name, got, n)) continue;
    for (const char* name : names) {
      const size_t len = strlen(name) + 1;
      if (len <= n && memcmp(got, name, len) == 0) return true;
    }
  }
  return false;
}

struct LoadedWalk {
  std::span<const char* const> names;
  std::string found;
};

int visitLoaded(dl_phdr_info* info, size_t, void* data) {
  auto* walk = static_cast<LoadedWalk*>(data);
  MemoryImage img(info);
  Dynamic d;
  if (!readDynamic(img, &d, nullptr) || !importsAny(img, d, walk->names)) return 0;
  if (info->dlpi_name && *info->dlpi_name) {
    walk->found = info->dlpi_name;
  } else {  // the executable
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    walk->found = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "the executable";
  }
  return 1;
}

std::string dirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

/// `list` split at ':' (and ';', as the loader does), $ORIGIN taken as `origin`; entries with other
/// dynamic string tokens ($LIB, $PLATFORM) are left out.
void appendSearchPath(const std::string& list, const std::string& origin,
                      std::vector<std::string>* dirs) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find_first_of(":;", start);
    if (end == std::string::npos) end = list.size();
    std::string dir = list.substr(start, end - start);
    start = end + 1;
    for (const char* token : {"${ORIGIN}", "$ORIGIN"})
      for (size_t at = 0; (at = dir.find(token, at)) != std::string::npos; at += origin.size())
        dir.replace(at, strlen(token), origin);
    if (!dir.empty() && dir.find('$') == std::string::npos) dirs->push_back(dir);
  }
}

/// ld.so.conf's directories (its `include`s followed), as ldconfig puts them in the cache.
void readLdConf(const std::string& file, int depth, std::vector<std::string>* dirs) {
  std::ifstream in(file);
  std::string line;
  while (depth < 8 && std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    const size_t b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b, e - b + 1);
    if (line.compare(0, 8, "include ") == 0 || line.compare(0, 8, "include\t") == 0) {
      std::string pattern = line.substr(line.find_first_not_of(" \t", 8));
      if (pattern[0] != '/') pattern = dirName(file) + "/" + pattern;
      glob_t g{};
      if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) readLdConf(g.gl_pathv[i], depth + 1, dirs);
      globfree(&g);
    } else if (line[0] == '/') {
      dirs->push_back(line);
    }
  }
}

const std::vector<std::string>& systemDirs() {
  static const std::vector<std::string> dirs = [] {
    std::vector<std::string> d;
    readLdConf("/etc/ld.so.conf", 0, &d);
    for (const char* s : {"/lib64", "/usr/lib64", "/lib", "/usr/lib"}) d.push_back(s);
    return d;
  }();
  return dirs;
}

/// One file of a program's closure, with what its dynamic section says.
struct Object {
  std::string path;
  FileImage image;
  Dynamic dynamic;
  std::vector<uint64_t> needed;
  std::string rpath, runpath;  ///< with $ORIGIN already expanded: search lists
};

/// Opens `path` as part of the closure: false when it cannot be read or is of another kind.
bool openObject(const std::string& path, Object* o, std::string* why) {
  o->path = path;
  if (!o->image.open(path, why)) return false;
  if (!readDynamic(o->image, &o->dynamic, &o->needed)) return true;  // static: needs nothing
  o->image.prefetch(o->dynamic.strtab, o->dynamic.strsz);
  std::string s;
  if (o->dynamic.rpath != kNone && stringAt(o->image, o->dynamic, o->dynamic.rpath, &s))
    o->rpath = s;
  if (o->dynamic.runpath != kNone && stringAt(o->image, o->dynamic, o->dynamic.runpath, &s))
    o->runpath = s;
  return true;
}

using FileIds = std::set<std::pair<uint64_t, uint64_t>>;

/// Appends the library `name` to `objects` as the loader finds it for `requester` (the program is
/// `exe`), in the loader's search order, unless it is there already (`seen`) or nowhere.
void addLibrary(const std::string& name, const Object& requester, const Object& exe,
                std::deque<Object>* objects, FileIds* seen) {
  std::vector<std::string> dirs;
  if (name.find('/') != std::string::npos) {
    dirs.push_back("");
  } else {
    if (requester.runpath.empty()) {
      appendSearchPath(requester.rpath, dirName(requester.path), &dirs);
      if (&requester != &exe && exe.runpath.empty())
        appendSearchPath(exe.rpath, dirName(exe.path), &dirs);
    }
    if (const char* env = getenv("LD_LIBRARY_PATH"))
      appendSearchPath(env, dirName(exe.path), &dirs);
    appendSearchPath(requester.runpath, dirName(requester.path), &dirs);
    for (const std::string& d : systemDirs()) dirs.push_back(d);
  }
  for (const std::string& d : dirs) {
    std::string why;
    Object& o = objects->emplace_back();
    // One of another kind (32-bit, another machine): the loader searches on.
    if (openObject(d.empty() ? name : d + "/" + name, &o, &why)) {
      if (!seen->insert(o.image.id()).second) objects->pop_back();
      return;
    }
    objects->pop_back();
  }
}

}  // namespace

std::string loadedModuleImporting(std::span<const char* const> names) {
  LoadedWalk walk{names, {}};
  dl_iterate_phdr(visitLoaded, &walk);
  return walk.found;
}

std::string fileImporting(const std::string& path, std::span<const char* const> names,
                          std::string* error) {
  std::deque<Object> objects(1);  // stable addresses: requesters stay valid while the queue grows
  char real[PATH_MAX];
  if (!openObject(realpath(path.c_str(), real) ? real : path, &objects.front(), error)) return {};
  FileIds seen{objects.front().image.id()};
  std::set<std::string> found;  // DT_NEEDED names already looked for
  for (size_t i = 0; i < objects.size() && i < kMaxObjects; ++i) {
    Object& o = objects[i];
    if (importsAny(o.image, o.dynamic, names)) return o.path;
    std::string name;
    for (uint64_t offset : o.needed)  // a name once found is the same library for every object
      if (stringAt(o.image, o.dynamic, offset, &name) && found.insert(name).second)
        addLibrary(name, o, objects.front(), &objects, &seen);
  }
  return {};
}

}  // namespace hetopt
