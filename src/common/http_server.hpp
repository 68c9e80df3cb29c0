// What Strata's web servers (cpp-httplib: `strata site serve`, `strata monitor serve`) share:
// the security headers of every answer, and listening sockets. httplib sets SO_REUSEPORT on them
// by default, so a second server on a port in use started without error and the kernel split the
// connections between the two; here a port is one server's, and a port in use is an error
// that says so.
#pragma once

#include <httplib.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace strata {

// Sent with every answer: no sniffing, no framing, no referrer, and scripts only from the server
// itself (styles may be inline: the pages have a few).
inline httplib::Headers security_headers() {
  return {{"X-Content-Type-Options", "nosniff"},
          {"X-Frame-Options", "DENY"},
          {"Referrer-Policy", "no-referrer"},
          {"Content-Security-Policy",
           "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src "
           "'self' data:; frame-ancestors 'none'"}};
}

// SO_REUSEADDR only: a restart may take over a port its predecessor's closed connections still
// hold (TIME_WAIT), never one that another process listens on.
inline void listen_exclusively(httplib::Server& server) {
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

// Whether a server accepts connections at `address` (this machine's).
inline bool someone_listens(const addrinfo& address) {
  const int sock = ::socket(address.ai_family, address.ai_socktype, address.ai_protocol);
  if (sock < 0)
    return false;
  const bool accepted = ::connect(sock, address.ai_addr, address.ai_addrlen) == 0;
  ::close(sock);
  return accepted;
}

// Why `bind:port` cannot be listened on, in words (after httplib's bind failed, which does not
// say): one bind of our own, with the options above, tells.
inline std::string why_not_listening(const std::string& bind, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int status = ::getaddrinfo(bind.c_str(), std::to_string(port).c_str(), &hints, &found);
      status != 0)
    return "no such address " + bind + " (" + ::gai_strerror(status) + ")";
  int error = 0;
  bool listened = false;
  const int sock = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (sock < 0)
    error = errno;
  else {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(sock, found->ai_addr, found->ai_addrlen) != 0)
      error = errno;
    ::close(sock);
    listened = error == EADDRINUSE && someone_listens(*found);
  }
  ::freeaddrinfo(found);
  const std::string p = std::to_string(port);
  switch (error) {
  case EADDRINUSE:
    if (listened)
      return "port " + p + " is already in use on " + bind +
             " (another server listens there: stop it or choose another --port)";
    // Connections of a server that did not allow its successor the port (as Strata's did
    // before), closed, wait out their minute (TIME_WAIT).
    return "port " + p +
           " is still held by the closed connections of a server that ended "
           "(free within a minute) or is in use: try again, or choose another --port";
  case EACCES:
    return "port " + p + " is privileged (below 1024: root only)";
  case EADDRNOTAVAIL:
    return bind + " is not an address of this machine";
  case 0:
    return "port " + p + " could not be bound";
  default:
    return std::strerror(error);
  }
}

} // namespace strata
