//go:build !linux

package server

import "net"

// peerIsOwner trusts the socket's file mode (0600) where the system does not say who the
// peer is.
func peerIsOwner(net.Conn) bool { return true }
