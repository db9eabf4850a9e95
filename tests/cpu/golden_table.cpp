// The golden table: the hash of every golden case (first generated at commit 1c2698a;
// test_golden.cpp explains the scheme and how to regenerate the table), the float profile it was
// generated on, and check(), which compares a case with the table, or prints the case in the
// table's format when CAGRA_GOLDEN_PRINT=1.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "cpu/distance.hpp"
#include "golden.hpp"

namespace cagra::test::golden {
namespace {

// ---- the golden table (regenerated with CAGRA_GOLDEN_PRINT=1 when the random initial nodes ---
// ---- became counter-based draws from the shared query hash; first generated at 1c2698a) ------

constexpr const char* kGoldenProfile = "x86_64-avx512f+f16c gcc12";

const std::map<std::string, std::string>& golden_table() {
  static const std::map<std::string, std::string> table = {
      {"bigann.u8.l2.bf.rank.d32.graph", "d3f033a6ced13813"},
      {"bigann.u8.l2.bf.rank.d32.search.defaults.k10.ids", "5dc9af636789e533"},
      {"bigann.u8.l2.bf.rank.d32.search.defaults.k10.dist", "d447aad867d7bb6c"},
      {"bigann.u8.l2.bf.rank.d32.search.defaults.kfull.ids", "3b10f564c0a64d3a"},
      {"bigann.u8.l2.bf.rank.d32.search.defaults.kfull.dist", "0ec3aae7bb4d3887"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.k10.ids", "e77b8e408f18c423"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.k10.dist", "e190880d235b9811"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.kfull.ids", "fc0ba27f669f349f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.kfull.dist", "2040f912091f43d0"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.kfull.ids", "049540ceaf7a3f25"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.kfull.dist", "218c4a2c71db996f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk64.k10.ids", "5dc9af636789e533"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk64.k10.dist", "d447aad867d7bb6c"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk64.kfull.ids", "3b10f564c0a64d3a"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk64.kfull.dist", "0ec3aae7bb4d3887"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk256.k10.ids", "15bd6364298fdc19"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk256.k10.dist", "c16f2dbd0fd1e641"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk256.kfull.ids", "015f6cd93ff06455"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk256.kfull.dist", "2b13a304a1ca87a8"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.width1.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.width1.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.width1.kfull.ids", "049540ceaf7a3f25"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.width1.kfull.dist", "218c4a2c71db996f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.width4.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.width4.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.width4.kfull.ids", "0e36321860d9e06c"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.width4.kfull.dist", "f0a00afd43a8f3f7"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.reset2.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.reset2.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.reset2.kfull.ids", "049540ceaf7a3f25"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.reset2.kfull.dist", "218c4a2c71db996f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.hashbits10.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.hashbits10.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.hashbits10.kfull.ids", "049540ceaf7a3f25"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.hashbits10.kfull.dist", "218c4a2c71db996f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.hashbits10.reset2.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.hashbits10.reset2.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.hashbits10.reset2.kfull.ids", "049540ceaf7a3f25"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.hashbits10.reset2.kfull.dist", "218c4a2c71db996f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter5.k10.ids", "54de523bcfa4804b"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter5.k10.dist", "deddd3ca53d2e680"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter5.kfull.ids", "616cbcd85a9d4275"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter5.kfull.dist", "48d90a1f0f183793"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.miniter40.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.miniter40.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.miniter40.kfull.ids", "049540ceaf7a3f25"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.miniter40.kfull.dist", "218c4a2c71db996f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.samplings3.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.samplings3.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.samplings3.kfull.ids", "049540ceaf7a3f25"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.samplings3.kfull.dist", "218c4a2c71db996f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.seed7.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.seed7.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.seed7.kfull.ids", "47de9e1c97237fc2"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.seed7.kfull.dist", "5261457fc2eafa40"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.k10.ids", "46509880b853ec1f"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.k10.dist", "4829a94c9e35f6c5"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.kfull.ids", "cc8496791f163173"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.kfull.dist", "4d4daad01af1dfa6"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.samplings3.k10.ids", "25a07a378e19aeed"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.samplings3.k10.dist", "9d23f62e83de5f5d"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.samplings3.kfull.ids", "3127334d3abbdee7"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.samplings3.kfull.dist",
       "e8c5539a4be2b1e4"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.seed7.k10.ids", "f94b0d8fc698358c"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.seed7.k10.dist", "29c49f81b5614a7e"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.seed7.kfull.ids", "dc35418601dbae5a"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk32.maxiter3.seed7.kfull.dist", "d2d094b83536d197"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk64.width4.hashbits10.reset2.samplings3.seed7.k10.ids",
       "5dc9af636789e533"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk64.width4.hashbits10.reset2.samplings3.seed7.k10.dist",
       "d447aad867d7bb6c"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk64.width4.hashbits10.reset2.samplings3.seed7.kfull."
       "ids",
       "8b2630725ea74c37"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk64.width4.hashbits10.reset2.samplings3.seed7.kfull."
       "dist",
       "2e928cc26e56b2ad"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.k1.ids", "1f4bbe45d1299eb2"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.k1.dist", "f9623dd5462774f3"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.k100.ids", "d556567d41e17367"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.k100.dist", "46d440b4303ac0f8"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.k10.queries1.ids", "03280b8b5dcb20b6"},
      {"bigann.u8.l2.bf.rank.d32.search.itopk16.k10.queries1.dist", "16226e2dfd9ead1d"},
      {"bigann.u8.l2.nnd.rank.d32.graph", "f002d22aa9107308"},
      {"bigann.u8.l2.nnd.rank.d32.knn_iterations", "0000000000000004"},
      {"bigann.u8.l2.nnd.rank.d32.search.defaults.k10.ids", "5dc9af636789e533"},
      {"bigann.u8.l2.nnd.rank.d32.search.defaults.k10.dist", "d447aad867d7bb6c"},
      {"bigann.u8.l2.nnd.rank.d32.search.defaults.kfull.ids", "3b10f564c0a64d3a"},
      {"bigann.u8.l2.nnd.rank.d32.search.defaults.kfull.dist", "0ec3aae7bb4d3887"},
      {"bigann.u8.l2.nnd.rank.d32.search.itopk32.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.nnd.rank.d32.search.itopk32.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.nnd.rank.d32.search.itopk32.kfull.ids", "049540ceaf7a3f25"},
      {"bigann.u8.l2.nnd.rank.d32.search.itopk32.kfull.dist", "218c4a2c71db996f"},
      {"bigann.u8.l2.nnd.rank.d32.search.itopk32.width4.k10.ids", "5676237492873a6d"},
      {"bigann.u8.l2.nnd.rank.d32.search.itopk32.width4.k10.dist", "c8255a95314ceb49"},
      {"bigann.u8.l2.nnd.rank.d32.search.itopk32.width4.kfull.ids", "0e36321860d9e06c"},
      {"bigann.u8.l2.nnd.rank.d32.search.itopk32.width4.kfull.dist", "f0a00afd43a8f3f7"},
      {"bigann.f16.l2.bf.rank.d32.graph", "d3f033a6ced13813"},
      {"bigann.f16.l2.bf.rank.d32.vectors", "e732b81396848179"},
      {"bigann.f16.l2.bf.rank.d32.search.defaults.k10.ids", "5dc9af636789e533"},
      {"bigann.f16.l2.bf.rank.d32.search.defaults.k10.dist", "d447aad867d7bb6c"},
      {"bigann.f16.l2.bf.rank.d32.search.defaults.kfull.ids", "89faa2d9ee7a12b4"},
      {"bigann.f16.l2.bf.rank.d32.search.defaults.kfull.dist", "f10d44f2b7148d04"},
      {"bigann.f16.l2.bf.rank.d32.search.itopk32.k10.ids", "5676237492873a6d"},
      {"bigann.f16.l2.bf.rank.d32.search.itopk32.k10.dist", "c8255a95314ceb49"},
      {"bigann.f16.l2.bf.rank.d32.search.itopk32.kfull.ids", "461bba18da70684b"},
      {"bigann.f16.l2.bf.rank.d32.search.itopk32.kfull.dist", "e6dec563a00932ab"},
      {"bigann.f16.l2.bf.rank.d32.search.itopk128.k10.ids", "15bd6364298fdc19"},
      {"bigann.f16.l2.bf.rank.d32.search.itopk128.k10.dist", "c16f2dbd0fd1e641"},
      {"bigann.f16.l2.bf.rank.d32.search.itopk128.kfull.ids", "2346856df2a63aa0"},
      {"bigann.f16.l2.bf.rank.d32.search.itopk128.kfull.dist", "7a8e2d2b3127a453"},
      {"bigann.u8.ip.bf.rank.d32.graph", "9f0f57ec2663a32e"},
      {"bigann.u8.ip.bf.rank.d32.search.defaults.k10.ids", "16eb45cb5ca79f7e"},
      {"bigann.u8.ip.bf.rank.d32.search.defaults.k10.dist", "e9758a73a276844a"},
      {"bigann.u8.ip.bf.rank.d32.search.defaults.kfull.ids", "3d47a1e908ec5034"},
      {"bigann.u8.ip.bf.rank.d32.search.defaults.kfull.dist", "7c35ebfa8831b3fd"},
      {"bigann.u8.ip.bf.rank.d32.search.itopk32.k10.ids", "4b26426f348e1b48"},
      {"bigann.u8.ip.bf.rank.d32.search.itopk32.k10.dist", "bcdd7e290404002c"},
      {"bigann.u8.ip.bf.rank.d32.search.itopk32.kfull.ids", "7b0b9ecab7af6f7f"},
      {"bigann.u8.ip.bf.rank.d32.search.itopk32.kfull.dist", "d7e873a74a288fc0"},
      {"bigann.u8.l2.bf.knn64.ids", "5cb51dc37a597d97"},
      {"bigann.u8.l2.bf.knn64.dist", "14a233805fb199fe"},
      {"bigann.u8.l2.bf.knn64.optimize.rank.d32", "d3f033a6ced13813"},
      {"bigann.u8.l2.bf.knn64.optimize.rank.d16", "cd9376d4d16b6dfc"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32", "186d4dec60b54309"},
      {"bigann.u8.l2.bf.knn64.nodist.optimize.distance.d32", "186d4dec60b54309"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32.search.defaults.k10.ids", "15bd6364298fdc19"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32.search.defaults.k10.dist", "c16f2dbd0fd1e641"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32.search.defaults.kfull.ids", "76b4b458c351377e"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32.search.defaults.kfull.dist",
       "17e7c45376e136c0"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32.search.itopk32.k10.ids", "16827f81cea7f38b"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32.search.itopk32.k10.dist", "23448337a130996c"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32.search.itopk32.kfull.ids", "e1db75642f31476a"},
      {"bigann.u8.l2.bf.knn64.optimize.distance.d32.search.itopk32.kfull.dist", "4e9ec1fac6f5d8eb"},
      {"fashion4k.u8.l2.bf.rank.d32.graph", "853466ae3e1b567b"},
      {"fashion4k.u8.l2.bf.rank.d32.search.defaults.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.defaults.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.defaults.kfull.ids", "8016524a29043a27"},
      {"fashion4k.u8.l2.bf.rank.d32.search.defaults.kfull.dist", "f0c216bee96f8e1d"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk16.k10.ids", "c7c624b6e3e6aaf5"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk16.k10.dist", "69604bc9f3b56944"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk16.kfull.ids", "19846c87ebfc8fd7"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk16.kfull.dist", "71494bde02c44f0c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.kfull.ids", "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.kfull.dist", "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk64.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk64.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk64.kfull.ids", "8016524a29043a27"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk64.kfull.dist", "f0c216bee96f8e1d"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk256.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk256.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk256.kfull.ids", "d5c5a943f75b9936"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk256.kfull.dist", "3793a38465e9a620"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.width1.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.width1.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.width1.kfull.ids", "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.width1.kfull.dist", "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.width4.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.width4.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.width4.kfull.ids", "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.width4.kfull.dist", "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.reset2.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.reset2.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.reset2.kfull.ids", "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.reset2.kfull.dist", "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.hashbits10.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.hashbits10.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.hashbits10.kfull.ids", "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.hashbits10.kfull.dist", "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.hashbits10.reset2.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.hashbits10.reset2.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.hashbits10.reset2.kfull.ids",
       "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.hashbits10.reset2.kfull.dist",
       "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter5.k10.ids", "c7bc1c5352b9a812"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter5.k10.dist", "34abccb518bd6ee7"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter5.kfull.ids", "6891f0d1da13331b"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter5.kfull.dist", "5768736afec96343"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.miniter40.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.miniter40.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.miniter40.kfull.ids", "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.miniter40.kfull.dist", "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.samplings3.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.samplings3.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.samplings3.kfull.ids", "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.samplings3.kfull.dist", "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.seed7.k10.ids", "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.seed7.k10.dist", "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.seed7.kfull.ids", "63f396dde4e1f932"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.seed7.kfull.dist", "a27cdac2672f589c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.k10.ids", "6972ba1bbcd9f60e"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.k10.dist", "407b7069c57a3d35"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.kfull.ids", "9dd02b441fafee77"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.kfull.dist", "71733fbff09b6584"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.samplings3.k10.ids",
       "682cdbe71fd500c2"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.samplings3.k10.dist",
       "a1f0afa3be4215f7"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.samplings3.kfull.ids",
       "eb7a565d40d5efb6"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.samplings3.kfull.dist",
       "a62f2f145aebabc7"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.seed7.k10.ids", "979131165fd739d0"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.seed7.k10.dist", "5220fffab5a31787"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.seed7.kfull.ids", "53b39c65c59b9721"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk32.maxiter3.seed7.kfull.dist", "501cae76a6dd19db"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk64.width4.hashbits10.reset2.samplings3.seed7.k10."
       "ids",
       "a83ed67af140886c"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk64.width4.hashbits10.reset2.samplings3.seed7.k10."
       "dist",
       "3d59642a8cb5f171"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk64.width4.hashbits10.reset2.samplings3.seed7.kfull."
       "ids",
       "8016524a29043a27"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk64.width4.hashbits10.reset2.samplings3.seed7.kfull."
       "dist",
       "f0c216bee96f8e1d"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk16.k40.ids", "044fca65b5539eb9"},
      {"fashion4k.u8.l2.bf.rank.d32.search.itopk16.k40.dist", "000eedc4b806f6e1"},
      {"fashion4k.u8.ip.nnd.distance.d32.graph", "452d45c16e4dc569"},
      {"fashion4k.u8.ip.nnd.distance.d32.knn_iterations", "0000000000000005"},
      {"fashion4k.u8.ip.nnd.distance.d32.search.defaults.k10.ids", "5abcd63aed88b18a"},
      {"fashion4k.u8.ip.nnd.distance.d32.search.defaults.k10.dist", "34f80a94d52734a0"},
      {"fashion4k.u8.ip.nnd.distance.d32.search.defaults.kfull.ids", "d707791bb3e03fcf"},
      {"fashion4k.u8.ip.nnd.distance.d32.search.defaults.kfull.dist", "214c7cf19c7e83a3"},
      {"fashion4k.u8.ip.nnd.distance.d32.search.itopk32.k10.ids", "18b3c816b8056af7"},
      {"fashion4k.u8.ip.nnd.distance.d32.search.itopk32.k10.dist", "5705397ae3598ce5"},
      {"fashion4k.u8.ip.nnd.distance.d32.search.itopk32.kfull.ids", "17911f27ecb9b3d1"},
      {"fashion4k.u8.ip.nnd.distance.d32.search.itopk32.kfull.dist", "f14bd922f03d0b12"},
      {"fashion4k.f32.cosine.bf.rank.d32.graph", "b16c6766666eb92e"},
      {"fashion4k.f32.cosine.bf.rank.d32.vectors", "ab5358e09ed0802a"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.defaults.k10.ids", "91a309bb8643572e"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.defaults.k10.dist", "260a465ab723afa6"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.defaults.kfull.ids", "3ff96ba8d18fa0a2"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.defaults.kfull.dist", "713efa752358a7f1"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.k10.ids", "91a309bb8643572e"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.k10.dist", "260a465ab723afa6"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.kfull.ids", "72c705e6e9c37663"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.kfull.dist", "83189c27a05720a1"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.width4.k10.ids", "91a309bb8643572e"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.width4.k10.dist", "260a465ab723afa6"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.width4.kfull.ids", "72c705e6e9c37663"},
      {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.width4.kfull.dist", "83189c27a05720a1"},
  };
  return table;
}

/** The inexact cases again for other float profiles, as a run there prints them ("not compared"
 *  lines: the name and the hash "here"). The AVX2-widest profile runs the library's own
 *  four-accumulator kernels (the development and CI machines: 2-core AMD EPYC, GCC 12), so that
 *  the cosine cases are compared where CI runs. */
const std::map<std::string, std::map<std::string, std::string>>& float_tables() {
  static const std::map<std::string, std::map<std::string, std::string>> tables = {
      {"x86_64-avx2x4+f16c gcc12",
       {
           {"fashion4k.f32.cosine.bf.rank.d32.graph", "b709730e20b1324a"},
           {"fashion4k.f32.cosine.bf.rank.d32.vectors", "ab5358e09ed0802a"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.defaults.k10.ids", "91a309bb8643572e"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.defaults.k10.dist", "63e49dfbbe0a770d"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.defaults.kfull.ids", "3ff96ba8d18fa0a2"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.defaults.kfull.dist", "91471f61794d1793"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.k10.ids", "91a309bb8643572e"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.k10.dist", "63e49dfbbe0a770d"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.kfull.ids", "72c705e6e9c37663"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.kfull.dist", "bcf4f8b33fa6f088"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.width4.k10.ids", "91a309bb8643572e"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.width4.k10.dist", "63e49dfbbe0a770d"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.width4.kfull.ids", "72c705e6e9c37663"},
           {"fashion4k.f32.cosine.bf.rank.d32.search.itopk32.width4.kfull.dist",
            "bcf4f8b33fa6f088"},
       }},
  };
  return tables;
}

bool print_mode() {
  const char* e = std::getenv("CAGRA_GOLDEN_PRINT");
  return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
}

/** Which float kernels this process's library runs (cpu::kernel_profile(): the target_clones
 *  variant of src/cpu/distance.cpp and the F16C path for f16 rows), plus the compiler. */
std::string float_profile() {
  std::string p = cpu::kernel_profile();
#if defined(__clang__)
  p += " clang" + std::to_string(__clang_major__);
#elif defined(__GNUC__)
  p += " gcc" + std::to_string(__GNUC__);
#endif
  return p;
}

}  // namespace

/** Records one case: prints it in print mode, else compares with the table. `exact`: the bytes do
 *  not depend on float rounding (checked on every machine); otherwise only on kGoldenProfile. */
void check(const std::string& name, uint64_t hash, bool exact) {
  static std::map<std::string, uint64_t>
      seen;  // a name must mean one case (--gtest_repeat is fine)
  auto [prev, fresh] = seen.emplace(name, hash);
  ASSERT_TRUE(fresh || prev->second == hash) << "golden case name used twice: " << name;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, hash);
  if (print_mode()) {
    static bool header = false;
    if (!header) {
      std::printf("constexpr const char* kGoldenProfile = \"%s\";\n", float_profile().c_str());
      header = true;
    }
    std::printf("      {\"%s\", \"%s\"},\n", name.c_str(), hex);
    return;
  }
  const auto& table = golden_table();
  auto it = table.find(name);
  ASSERT_NE(it, table.end()) << "golden case " << name << " (hash " << hex
                             << ") has no entry in kGolden: regenerate with CAGRA_GOLDEN_PRINT=1";
  if (!exact && float_profile() != kGoldenProfile) {
    const auto other = float_tables().find(float_profile());
    if (other != float_tables().end()) {
      const auto entry = other->second.find(name);
      ASSERT_NE(entry, other->second.end())
          << "golden case " << name << " (hash " << hex << ") has no entry in the '"
          << float_profile() << "' table: add the \"not compared\" line's hash there";
      EXPECT_EQ(entry->second, std::string(hex))
          << "golden case " << name << " on float profile " << float_profile()
          << ": the CPU backend's float results changed (see test_golden.cpp)";
      return;
    }
    std::printf(
        "[ golden   ] %s: not compared (float rounding: this machine is '%s', the table '%s'): "
        "%s here, %s in the table\n",
        name.c_str(), float_profile().c_str(), kGoldenProfile, hex, it->second.c_str());
    return;
  }
  EXPECT_EQ(it->second, std::string(hex))
      << "golden case " << name << ": the CPU backend's behaviour changed (graph bytes or search "
      << "ids/distances differ from the ones recorded at commit 1c2698a). A refactor must not "
         "change "
      << "them. If the change is intended, regenerate the table with CAGRA_GOLDEN_PRINT=1 (see the "
      << "top of tests/cpu/test_golden.cpp).";
}

}  // namespace cagra::test::golden
