import Subprocess

/// The posix_spawn wrapper lives in `Subprocess` (production code: `parley lab` spawns nodes);
/// tests keep using it by this name.
public typealias ChildProcess = Subprocess.ChildProcess
