package main

import (
	"net"
	"testing"
)

func TestListenLoopbackFallsBackWhenPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().(*net.TCPAddr).Port
	ln, inUse, err := listenLoopback(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr)
	if !inUse || addr.Port == busy {
		t.Fatalf("port %d in use: got port %d, inUse=%v; want another port and inUse", busy, addr.Port, inUse)
	}
	if !addr.IP.Equal(net.ParseIP("127.0.0.1")) {
		t.Fatalf("bound %s, want 127.0.0.1 only", addr.IP)
	}
}

func TestListenLoopbackKeepsAFreeRequestedPort(t *testing.T) {
	port, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	ln, inUse, err := listenLoopback(port)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if inUse || ln.Addr().(*net.TCPAddr).Port != port {
		t.Fatalf("free port %d: got %s inUse=%v", port, ln.Addr(), inUse)
	}
}

func TestListenLoopbackRefusesOutOfRange(t *testing.T) {
	if _, _, err := listenLoopback(70000); err == nil {
		t.Fatal("port 70000 accepted")
	}
}
