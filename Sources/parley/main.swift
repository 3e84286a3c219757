// The `parley` executable: everything lives in ParleyCLI; this only hands over the exit status.
import ParleyCLI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Every file Parley creates holds messages, keys or their traces (the store, its WAL, the control
// socket, exports, logs): none is for group or others to read (docs/ARCHITECTURE.md, *Private files*).
umask(0o077)
exit(ParleyCommandLine.main())
