// The identity of the machine a process runs on, as far as it decides performance: the CPU (vendor,
// family/model/stepping, the ISA extensions dtnn's kernels and oneDNN dispatch on), its size (logical CPUs,
// physical cores, sockets, cache sizes) and what it runs under (kernel, hypervisor). The model name alone is
// not enough: cloud VMs report "AMD EPYC" or "Intel(R) Xeon(R) Processor" for several generations.
//
// key() is what `dtnn compare` and `dtnn history` compare to tell machines apart: every field above except
// the host name and the kernel (a fleet of identical CI VMs is one machine; a kernel update is shown, not a
// new machine).
#pragma once

#include <string>

namespace dtnn {

struct MachineIdentity {
  std::string vendor;             // /proc/cpuinfo vendor_id: GenuineIntel, AuthenticAMD, ...; "" if unreadable
  int family = -1, model = -1, stepping = -1;
  std::string model_name;         // /proc/cpuinfo "model name"
  std::string isa;                // the extensions below that the CPU has, in this order, space-separated
  int logical_cpus = 0;           // online logical processors (std::thread::hardware_concurrency)
  int physical_cores = 0;         // distinct (physical id, core id) pairs; 0 if /proc/cpuinfo does not say
  int sockets = 0;                // distinct physical ids
  int l1d_kib = 0, l2_kib = 0, l3_kib = 0;  // per cache instance, of cpu0 (sysfs); 0 if unknown
  std::string kernel;             // uname: release and version
  std::string hypervisor;         // CPUID leaf 0x40000000 vendor (KVMKVMKVM, Microsoft Hv, ...), "none" on bare
                                  // metal, "unknown" where it cannot be asked

  // On Arm, vendor is "arm-implementer-0x41" (the CPU implementer), family the CPU architecture, model the CPU
  // part and stepping variant * 16 + revision.

  // Something of the CPU was read (a machine nobody described has no key).
  bool known() const;
  // "vendor family/model/stepping 'name' isa=... 2c/2t/1s L1d 48K L2 2048K L3 266240K hv=KVMKVMKVM"; "" when
  // !known() -- "not recorded", as rows stored before the identity existed.
  std::string key() const;
};

// The ISA extensions recorded (the /proc/cpuinfo flag names).
extern const char* const kRecordedIsa[];

// Read once per process (the first call reads /proc and /sys and asks CPUID), then the same object.
const MachineIdentity& machine_identity();

// Parses a /proc/cpuinfo text (exposed for tests: a machine's identity from another machine's cpuinfo).
MachineIdentity parse_cpuinfo(const std::string& cpuinfo);

}  // namespace dtnn
