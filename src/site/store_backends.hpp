// The two implementations of site::store (internal to the site library).
#pragma once

#include "site/store.hpp"

namespace strata::site {

std::unique_ptr<store> open_sqlite(const std::string& path);
std::unique_ptr<store> open_postgresql(const std::string& conninfo);

} // namespace strata::site
