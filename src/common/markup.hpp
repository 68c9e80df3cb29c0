// Text made safe inside the elements and quoted attributes of HTML and XML: one escape for every
// page and export Strata writes (job reports, site reports, the web interface, the analyzer's XML).
#pragma once

#include <string>
#include <string_view>

namespace strata {

// & < > " ' as entities valid in both HTML and XML; control characters other than newline and tab
// (not allowed in XML 1.0, not meant to be seen in HTML) written as the visible text "\x1b", as the
// text report writes them, so nothing of the input is lost and no byte of it changes how a browser
// or an XML parser reads the document.
std::string escape_markup(std::string_view text);

} // namespace strata
