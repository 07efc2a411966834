package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// loopbackHost is the only address anything in this binary listens on.
const loopbackHost = "127.0.0.1"

// listenLoopback opens a TCP listener on 127.0.0.1. A requested port of 0 means any free port;
// a requested port that is in use falls back to a free port, and inUse says so. Nothing here
// ever binds another host.
func listenLoopback(requestedPort int) (ln net.Listener, inUse bool, err error) {
	if requestedPort < 0 || requestedPort > 65535 {
		return nil, false, fmt.Errorf("port %d is out of range 0-65535", requestedPort)
	}
	ln, err = net.Listen("tcp", net.JoinHostPort(loopbackHost, strconv.Itoa(requestedPort)))
	if err == nil {
		return ln, false, nil
	}
	if requestedPort == 0 || !errors.Is(err, syscall.EADDRINUSE) {
		return nil, false, err
	}
	ln, err = net.Listen("tcp", net.JoinHostPort(loopbackHost, "0"))
	return ln, true, err
}

// freeLoopbackPort returns a port that was free on 127.0.0.1 a moment ago, for components (etcd)
// that open their own listeners; callers retry with another port when the bind loses a race.
func freeLoopbackPort() (int, error) {
	ln, _, err := listenLoopback(0)
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
