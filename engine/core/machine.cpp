// See machine.h.
#include "core/machine.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/utsname.h>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace dtnn {

const char* const kRecordedIsa[] = {"sse4_2",      "avx",         "fma",       "avx2",       "avx512f",
                                    "avx512bw",    "avx512vl",    "avx512_vnni", "avx512_bf16", "avx512_fp16",
                                    "avx_vnni",    "amx_tile",    "amx_bf16",  "amx_int8",   "asimd",
                                    "sve",         "sve2",        nullptr};

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

int to_int(const std::string& s) {
  try {
    return std::stoi(s);
  } catch (...) {
    return -1;
  }
}

// "48K" / "2048K" / "32M" (sysfs cache size) in KiB; 0 if unreadable.
int read_kib(const std::string& path) {
  std::ifstream f(path);
  std::string v;
  if (!(f >> v) || v.empty()) return 0;
  const char unit = v.back();
  const int n = to_int(unit >= '0' && unit <= '9' ? v : v.substr(0, v.size() - 1));
  if (n < 0) return 0;
  return unit == 'M' ? n * 1024 : unit == 'G' ? n * 1024 * 1024 : n;
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return trim(line);
}

void read_caches(MachineIdentity& m) {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level"), type = read_line(dir + "type");
    if (level.empty()) break;
    const int kib = read_kib(dir + "size");
    if (level == "1" && type == "Data") m.l1d_kib = kib;
    if (level == "2") m.l2_kib = kib;
    if (level == "3") m.l3_kib = kib;
  }
}

std::string hypervisor_vendor() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return "unknown";
  if (!(c & (1u << 31))) return "none";  // CPUID.1:ECX bit 31: running under a hypervisor
  __cpuid(0x40000000, a, b, c, d);
  char vendor[13] = {};
  for (int i = 0; i < 4; ++i) {
    vendor[i] = static_cast<char>(b >> (8 * i));
    vendor[4 + i] = static_cast<char>(c >> (8 * i));
    vendor[8 + i] = static_cast<char>(d >> (8 * i));
  }
  const std::string v = trim(vendor);
  return v.empty() ? "unnamed hypervisor" : v;
#else
  return "unknown";
#endif
}

}  // namespace

MachineIdentity parse_cpuinfo(const std::string& cpuinfo) {
  MachineIdentity m;
  std::istringstream in(cpuinfo);
  std::set<std::pair<std::string, std::string>> cores;
  std::set<std::string> sockets;
  std::string physical_id;
  bool first = true;
  std::string flags;
  int arm_variant = -1, arm_revision = -1;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) {
      if (trim(line).empty() && (!m.vendor.empty() || m.model >= 0)) first = false;  // later blocks: only the ids
      continue;
    }
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "physical id") {
      physical_id = value;
      sockets.insert(value);
    }
    if (key == "core id") cores.insert({physical_id, value});
    if (!first) continue;
    if (key == "vendor_id") m.vendor = value;
    if (key == "cpu family") m.family = to_int(value);
    if (key == "model") m.model = to_int(value);
    if (key == "model name") m.model_name = value;
    if (key == "stepping") m.stepping = to_int(value);
    if (key == "flags" || key == "Features") flags = " " + value + " ";
    // Arm (aarch64) says who designed the core and which one: implementer 0x41 (Arm), 0x61 (Apple), 0xc0
    // (Ampere), ... and part 0xd0c (Neoverse N1), 0xd40 (V1), ...; variant and revision are the stepping.
    if (key == "CPU implementer") m.vendor = "arm-implementer-" + value;
    if (key == "CPU architecture") m.family = to_int(value);
    if (key == "CPU part") m.model = static_cast<int>(std::strtol(value.c_str(), nullptr, 0));
    if (key == "CPU variant") arm_variant = static_cast<int>(std::strtol(value.c_str(), nullptr, 0));
    if (key == "CPU revision") arm_revision = to_int(value);
  }
  if (arm_variant >= 0 && arm_revision >= 0) m.stepping = arm_variant * 16 + arm_revision;
  for (int i = 0; kRecordedIsa[i]; ++i)
    if (flags.find(std::string(" ") + kRecordedIsa[i] + " ") != std::string::npos)
      m.isa += (m.isa.empty() ? "" : " ") + std::string(kRecordedIsa[i]);
  m.physical_cores = static_cast<int>(cores.size());
  m.sockets = static_cast<int>(sockets.size());
  return m;
}

bool MachineIdentity::known() const { return !vendor.empty() || !model_name.empty() || family >= 0 || model >= 0; }

std::string MachineIdentity::key() const {
  if (!known()) return "";
  std::ostringstream k;
  k << (vendor.empty() ? "unknown-vendor" : vendor) << ' ' << family << '/' << model << '/' << stepping << " '"
    << model_name << "' isa=" << (isa.empty() ? "-" : isa) << ' ' << physical_cores << "c/" << logical_cpus << "t/"
    << sockets << "s L1d " << l1d_kib << "K L2 " << l2_kib << "K L3 " << l3_kib << "K hv=" << hypervisor;
  return k.str();
}

const MachineIdentity& machine_identity() {
  static const MachineIdentity m = [] {
    std::ifstream f("/proc/cpuinfo");
    std::ostringstream text;
    text << f.rdbuf();
    MachineIdentity id = parse_cpuinfo(text.str());
    id.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
    read_caches(id);
    utsname u{};
    if (::uname(&u) == 0) id.kernel = std::string(u.sysname) + " " + u.release + " " + u.version;
    id.hypervisor = hypervisor_vendor();
    return id;
  }();
  return m;
}

}  // namespace dtnn
