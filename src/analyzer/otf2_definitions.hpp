// The global definitions of an OTF2 archive as libotf2 hands them over, before the trace reader
// checks and names them (trace_reader.cpp), and libotf2's errors as one line of text.
#pragma once

#include <otf2/otf2.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::analyze::otf2_definitions {

// libotf2 prints its errors to stderr by default: installed once, this keeps the last one
// instead, which otf2_reason gives (with `code`'s description when there is none) and forgets.
void install_error_capture();
std::string otf2_reason(OTF2_ErrorCode code);
void forget_last_error();

struct raw_group {
  OTF2_GroupType type = OTF2_GROUP_TYPE_UNKNOWN;
  OTF2_Paradigm paradigm = OTF2_PARADIGM_UNKNOWN;
  std::vector<uint64_t> members;
};

struct raw_region {
  uint32_t name = 0;
  OTF2_Paradigm paradigm = OTF2_PARADIGM_UNKNOWN;
  uint32_t file = 0;
  uint32_t line = 0;
  bool defined = false;
};

struct raw_location {
  uint64_t id = 0;
  uint64_t events = 0;
  uint32_t group = 0;
  OTF2_LocationType type = OTF2_LOCATION_TYPE_UNKNOWN;
};

struct raw_definitions {
  std::vector<std::string> strings;
  std::vector<bool> string_defined;
  std::unordered_map<uint32_t, raw_group> groups;
  std::vector<raw_region> regions;
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> comms; // ref -> (name, group)
  std::unordered_map<uint32_t, uint32_t> windows;                    // RMA window ref -> comm
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> sites; // ref -> (file, line)
  std::vector<raw_location> locations;
  struct property {
    uint64_t location;
    uint32_t name;
    uint64_t value;
  };
  std::vector<property> location_properties; // the unsigned ones
  uint32_t call_site_attr = UINT32_MAX;
  std::unordered_map<uint32_t, std::string> attribute_names;
  uint64_t resolution = 0, offset = 0, length = 0;
  std::string error;
};

// A table indexed by a definition's reference, grown to hold it.
template <class T> void grow_to(std::vector<T>& v, uint64_t ref) {
  if (ref >= v.size())
    v.resize(ref + 1);
}

// Every definition callback the reader needs, each filling the raw_definitions passed as their
// user data; a reference beyond what any real archive holds stops the reading with an error.
void register_callbacks(OTF2_GlobalDefReaderCallbacks* callbacks);

} // namespace strata::analyze::otf2_definitions
