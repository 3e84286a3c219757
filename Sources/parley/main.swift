// The `parley` executable: everything lives in ParleyCLI; this only hands over the exit status.
import ParleyCLI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

exit(ParleyCommandLine.main())
