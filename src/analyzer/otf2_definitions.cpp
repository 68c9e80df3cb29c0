#include "analyzer/otf2_definitions.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace strata::analyze::otf2_definitions {

namespace {
// A corrupt definition file can name any reference; beyond this many we refuse rather than
// allocate tables for them.
constexpr uint64_t max_reference = 1U << 24;

// OTF2 reports errors through a process-wide callback that prints to stderr by default. We keep
// the last message instead, so the caller prints one line of its own.
thread_local std::string otf2_last_error;

OTF2_ErrorCode capture_error(void*, const char*, uint64_t, const char*, OTF2_ErrorCode code,
                             const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, args);
  otf2_last_error = std::string(OTF2_Error_GetDescription(code)) + (text[0] ? ": " : "") + text;
  return code;
}

// A definition whose reference is past what the reader keeps: the error named, reading stopped.
bool out_of_range(raw_definitions* d, uint64_t self, const char* what) {
  if (self < max_reference)
    return false;
  d->error = std::string(what) + " " + std::to_string(self) + " is out of range";
  return true;
}

OTF2_CallbackCode on_string(void* data, OTF2_StringRef self, const char* text) {
  auto* d = static_cast<raw_definitions*>(data);
  if (out_of_range(d, self, "string definition"))
    return OTF2_CALLBACK_INTERRUPT;
  grow_to(d->strings, self);
  grow_to(d->string_defined, self);
  d->strings[self] = text ? text : "";
  d->string_defined[self] = true;
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_region(void* data, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef,
                            OTF2_StringRef, OTF2_RegionRole, OTF2_Paradigm paradigm,
                            OTF2_RegionFlag, OTF2_StringRef file, uint32_t line, uint32_t) {
  auto* d = static_cast<raw_definitions*>(data);
  if (out_of_range(d, self, "region definition"))
    return OTF2_CALLBACK_INTERRUPT;
  grow_to(d->regions, self);
  d->regions[self] = {name, paradigm, file, line, true};
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_group(void* data, OTF2_GroupRef self, OTF2_StringRef, OTF2_GroupType type,
                           OTF2_Paradigm paradigm, OTF2_GroupFlag, uint32_t count,
                           const uint64_t* members) {
  auto* d = static_cast<raw_definitions*>(data);
  d->groups[self] = {type, paradigm, std::vector<uint64_t>(members, members + count)};
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_comm(void* data, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group,
                          OTF2_CommRef, OTF2_CommFlag) {
  auto* d = static_cast<raw_definitions*>(data);
  if (out_of_range(d, self, "communicator definition"))
    return OTF2_CALLBACK_INTERRUPT;
  d->comms[self] = {name, group};
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_rma_window(void* data, OTF2_RmaWinRef self, OTF2_StringRef, OTF2_CommRef comm,
                                OTF2_RmaWinFlag) {
  auto* d = static_cast<raw_definitions*>(data);
  if (out_of_range(d, self, "RMA window definition"))
    return OTF2_CALLBACK_INTERRUPT;
  d->windows[self] = comm;
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_location(void* data, OTF2_LocationRef self, OTF2_StringRef,
                              OTF2_LocationType type, uint64_t events,
                              OTF2_LocationGroupRef group) {
  auto* d = static_cast<raw_definitions*>(data);
  d->locations.push_back({self, events, group, type});
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_location_property(void* data, OTF2_LocationRef location, OTF2_StringRef name,
                                       OTF2_Type type, OTF2_AttributeValue value) {
  if (type == OTF2_TYPE_UINT64)
    static_cast<raw_definitions*>(data)->location_properties.push_back(
        {location, name, value.uint64});
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_source_location(void* data, OTF2_SourceCodeLocationRef self,
                                     OTF2_StringRef file, uint32_t line) {
  auto* d = static_cast<raw_definitions*>(data);
  if (out_of_range(d, self, "source code location"))
    return OTF2_CALLBACK_INTERRUPT;
  d->sites[self] = {file, line};
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_attribute(void* data, OTF2_AttributeRef self, OTF2_StringRef name,
                               OTF2_StringRef, OTF2_Type type) {
  auto* d = static_cast<raw_definitions*>(data);
  // Names may be defined after the attribute; resolved once all definitions are in. Those of
  // the types the reader looks for: the call site, the mark of a partitioned request's message.
  if (type == OTF2_TYPE_SOURCE_CODE_LOCATION || type == OTF2_TYPE_UINT8)
    d->attribute_names[self] = std::to_string(name);
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_clock(void* data, uint64_t resolution, uint64_t offset, uint64_t length,
                           uint64_t) {
  auto* d = static_cast<raw_definitions*>(data);
  d->resolution = resolution;
  d->offset = offset;
  d->length = length;
  return OTF2_CALLBACK_SUCCESS;
}

} // namespace

void install_error_capture() {
  static const bool installed = [] {
    OTF2_Error_RegisterCallback(capture_error, nullptr);
    return true;
  }();
  (void)installed;
}

std::string otf2_reason(OTF2_ErrorCode code) {
  std::string reason = otf2_last_error.empty() ? OTF2_Error_GetDescription(code) : otf2_last_error;
  otf2_last_error.clear();
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return reason;
}

void forget_last_error() {
  otf2_last_error.clear();
}

void register_callbacks(OTF2_GlobalDefReaderCallbacks* callbacks) {
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(callbacks, on_string);
  OTF2_GlobalDefReaderCallbacks_SetRegionCallback(callbacks, on_region);
  OTF2_GlobalDefReaderCallbacks_SetGroupCallback(callbacks, on_group);
  OTF2_GlobalDefReaderCallbacks_SetCommCallback(callbacks, on_comm);
  OTF2_GlobalDefReaderCallbacks_SetRmaWinCallback(callbacks, on_rma_window);
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(callbacks, on_location);
  OTF2_GlobalDefReaderCallbacks_SetLocationPropertyCallback(callbacks, on_location_property);
  OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(callbacks, on_source_location);
  OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(callbacks, on_attribute);
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(callbacks, on_clock);
}

} // namespace strata::analyze::otf2_definitions
