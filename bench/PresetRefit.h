//===- PresetRefit.h - The refits the benchmarks measure --------*- C++ -*-===//

#ifndef M2N_BENCH_PRESETREFIT_H
#define M2N_BENCH_PRESETREFIT_H

#include "m2n/Spec/RefitSpec.h"

#include "llvm/ADT/StringRef.h"

namespace m2n::bench {

/// The refit that `m2n spec --model <model> --train <train> --gen <gen>`
/// writes. The benchmarks' cases are constants, so a case the presets
/// reject is a bug: it aborts, saying why.
spec::RefitSpec presetRefit(llvm::StringRef model, llvm::StringRef train,
                            llvm::StringRef gen);

} // namespace m2n::bench

#endif // M2N_BENCH_PRESETREFIT_H
