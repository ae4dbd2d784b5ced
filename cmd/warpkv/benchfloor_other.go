//go:build !linux

package main

import "errors"

// serveFloor needs epoll: the floor server is Linux-only.
func serveFloor(host string, port, threads int) error {
	return errors.New("bench floor: the floor server needs Linux (epoll)")
}
