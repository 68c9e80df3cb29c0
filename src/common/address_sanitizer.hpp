#pragma once
// Whether this translation unit is built with AddressSanitizer (scripts/sanitize-build.sh): GCC
// says so with __SANITIZE_ADDRESS__, clang with __has_feature. Unit tests that simulate at scale
// run smaller there, where the same work at -O0 takes 30 to 50 times as long; the optimized tree
// keeps checking the full size.

namespace strata::common {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool built_with_address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool built_with_address_sanitizer = true;
#else
inline constexpr bool built_with_address_sanitizer = false;
#endif
#else
inline constexpr bool built_with_address_sanitizer = false;
#endif

} // namespace strata::common
