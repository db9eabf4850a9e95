#include <gtest/gtest.h>
#include <cagra/cagra.hpp>
TEST(Smoke, Version) { EXPECT_STREQ(cagra::version(), "0.1.0"); }
