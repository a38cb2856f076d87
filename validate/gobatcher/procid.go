package main

import (
	_ "unsafe" // go:linkname
)

// procID is the id of the processor (P) the calling goroutine runs on, read through the
// runtime's procPin/procUnpin (exported for linkname: runtime/proc.go keeps them so for the
// packages that read it this way). It tells which processor ran a transaction without a
// system call.
func procID() int {
	id := procPin()
	procUnpin()
	return id
}

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()
