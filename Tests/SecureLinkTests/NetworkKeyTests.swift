import SecureLink
import Sodium
import Testing

@Suite struct NetworkKeyTests {
    @Test func withoutASecret_isTheBLAKE2bOfTheLabel() {
        #expect(NetworkKey(deploymentSecret: nil).bytes == GenericHash.hash(Array("parley/net/v1".utf8)))
        #expect(NetworkKey(deploymentSecret: nil) == NetworkKey(deploymentSecret: nil))
    }

    @Test func withASecret_isTheLabelKeyedByTheSecretsHash() {
        let secret = Array("correct horse battery staple".utf8)
        let expected = GenericHash.hash(Array("parley/net/v1".utf8), key: GenericHash.hash(secret))
        #expect(NetworkKey(deploymentSecret: secret).bytes == expected)
        #expect(NetworkKey(deploymentSecret: secret) == NetworkKey(deploymentSecret: secret))
    }

    @Test func differentSecrets_giveDifferentKeys() {
        let keys = [
            nil, [], [0], [1], Array("secret".utf8), Array("secret\n".utf8),
            [UInt8](repeating: 0, count: 64), [UInt8](repeating: 0, count: 65), [UInt8](repeating: 0, count: 4096),
        ]
        .map { NetworkKey(deploymentSecret: $0) }
        #expect(Set(keys.map(\.bytes)).count == keys.count)
        #expect(keys.allSatisfy { $0.bytes.count == 32 && $0.bytes != [UInt8](repeating: 0, count: 32) })
    }

    @Test func rawBytes_mustBe32() {
        #expect(NetworkKey(bytes: [UInt8](repeating: 1, count: 32))?.bytes == [UInt8](repeating: 1, count: 32))
        #expect(NetworkKey(bytes: [UInt8](repeating: 1, count: 31)) == nil)
    }

    @Test func description_neverShowsTheKey() {
        let key = NetworkKey(deploymentSecret: [42])
        #expect(!"\(key)".contains(Sodium.hex(key.bytes.prefix(4))))
        #expect("\(key)" == "NetworkKey(redacted)")
    }
}
