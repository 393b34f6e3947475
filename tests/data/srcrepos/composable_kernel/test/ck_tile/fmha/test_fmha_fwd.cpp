#include <gtest/gtest.h>
#include "ck_tile/ops/fmha.hpp"

using Kernel = ck_tile::FmhaFwdKernel<Pipeline, Epilogue>;

TEST(TestCkTileFmhaFwd, Bf16Basic)
{
    EXPECT_TRUE(run_fmha_fwd<Kernel>());
}
