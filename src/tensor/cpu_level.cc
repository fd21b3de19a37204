#include "tensor/cpu_level.h"

namespace lockstep {
namespace {

struct LevelInfo {
  CpuLevel level;
  std::string_view name;
};
constexpr LevelInfo kLevels[] = {
    {CpuLevel::kScalar, "scalar"},
    {CpuLevel::kAvx2, "avx2"},
    {CpuLevel::kAvx2Vnni, "avx2-vnni"},
    {CpuLevel::kAvx512, "avx512"},
    {CpuLevel::kAvx512Vnni, "avx512-vnni"},
    {CpuLevel::kAmx, "amx"},
    {CpuLevel::kNeon, "neon"},
    {CpuLevel::kNeonDotprod, "neon-dotprod"},
    {CpuLevel::kNeonI8mm, "neon-i8mm"},
};

#if defined(__x86_64__)
bool RunsAvx2(const CpuFeatures& c) { return c.avx2 && c.fma && c.f16c && c.bmi2; }
bool RunsAvx512(const CpuFeatures& c) {
  return RunsAvx2(c) && c.avx512f && c.avx512bw && c.avx512dq && c.avx512vl;
}
bool RunsAvx512Vnni(const CpuFeatures& c) { return RunsAvx512(c) && c.avx512vnni && c.avx512_dl_group; }
#endif

}  // namespace

std::span<const CpuLevel> AllCpuLevels() {
  static constexpr CpuLevel kAll[] = {CpuLevel::kScalar, CpuLevel::kAvx2,        CpuLevel::kAvx2Vnni,
                                      CpuLevel::kAvx512, CpuLevel::kAvx512Vnni,  CpuLevel::kAmx,
                                      CpuLevel::kNeon,   CpuLevel::kNeonDotprod, CpuLevel::kNeonI8mm};
  return kAll;
}

std::string_view CpuLevelName(CpuLevel level) {
  for (const LevelInfo& info : kLevels) {
    if (info.level == level) return info.name;
  }
  return "?";
}

std::optional<CpuLevel> ParseCpuLevel(std::string_view name) {
  for (const LevelInfo& info : kLevels) {
    if (info.name == name) return info.level;
  }
  return std::nullopt;
}

bool CpuRunsLevel(const CpuFeatures& cpu, CpuLevel level) {
  switch (level) {
    case CpuLevel::kScalar:
      return true;
#if defined(__x86_64__)
    case CpuLevel::kAvx2:
      return RunsAvx2(cpu);
    case CpuLevel::kAvx2Vnni:
      return RunsAvx2(cpu) && cpu.avx_vnni;
    case CpuLevel::kAvx512:
      return RunsAvx512(cpu);
    case CpuLevel::kAvx512Vnni:
      return RunsAvx512Vnni(cpu);
    case CpuLevel::kAmx:
      return RunsAvx512Vnni(cpu) && cpu.amx_int8;
#elif defined(__aarch64__)
    case CpuLevel::kNeon:
      return cpu.neon;
    case CpuLevel::kNeonDotprod:
      return cpu.neon && cpu.dotprod;
    case CpuLevel::kNeonI8mm:
      return cpu.neon && cpu.dotprod && cpu.i8mm;
#endif
    default:
      return false;
  }
}

std::vector<CpuLevel> RunnableCpuLevels(const CpuFeatures& cpu) {
  std::vector<CpuLevel> levels;
  for (CpuLevel level : AllCpuLevels()) {
    if (CpuRunsLevel(cpu, level)) levels.push_back(level);
  }
  return levels;
}

CpuLevel BestCpuLevel(const CpuFeatures& cpu) { return RunnableCpuLevels(cpu).back(); }

std::string CpuLevelList(const std::vector<CpuLevel>& levels) {
  std::string s;
  for (CpuLevel level : levels) {
    if (!s.empty()) s += ", ";
    s += CpuLevelName(level);
  }
  return s;
}

}  // namespace lockstep
