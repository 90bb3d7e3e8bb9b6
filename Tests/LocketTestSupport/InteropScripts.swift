/// Scripts that check locket against independent implementations, for the
/// engine's tests and the end-to-end tests alike.
public enum InteropScripts {
    /// Apple's kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM,
    /// written again with Python's `cryptography` package from the description
    /// in SecKeyAdaptors: `encrypt HEXPOINT` or `decrypt KEY.pem`, data on
    /// stdin; a last argument `zero-iv` for the variants without the variable
    /// IV (kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM). Or
    /// `batch`: one job a line on stdin, `COMMAND ARGUMENT HEXDATA [zero-iv]`,
    /// one hex line out for each (an interpreter that imports `cryptography`
    /// is ~0.1 CPU-s: one for many jobs; issue 38).
    public static let ecies = """
    import sys
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF

    CURVES = {65: ec.SECP256R1(), 97: ec.SECP384R1(), 133: ec.SECP521R1()}

    def key_and_iv(z, ephemeral, point_length, zero_iv):
        # AES-128 up to 256-bit curves, AES-256 above; then a 16-byte IV, or zeros.
        aes = 32 if (point_length - 1) // 2 * 8 > 256 else 16
        if zero_iv:
            return X963KDF(algorithm=hashes.SHA256(), length=aes, sharedinfo=ephemeral).derive(z), bytes(16)
        out = X963KDF(algorithm=hashes.SHA256(), length=aes + 16, sharedinfo=ephemeral).derive(z)
        return out[:aes], out[aes:]

    def ecies(command, argument, data, zero_iv):
        if command == "encrypt":
            point = bytes.fromhex(argument)
            curve = CURVES[len(point)]
            recipient = ec.EllipticCurvePublicKey.from_encoded_point(curve, point)
            ephemeral = ec.generate_private_key(curve)
            eph = ephemeral.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
            key, iv = key_and_iv(ephemeral.exchange(ec.ECDH(), recipient), eph, len(point), zero_iv)
            enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
            body = enc.update(data) + enc.finalize()
            return eph + body + enc.tag
        private = serialization.load_pem_private_key(open(argument, "rb").read(), None)
        n = 1 + 2 * ((private.curve.key_size + 7) // 8)
        eph, body, tag = data[:n], data[n:-16], data[-16:]
        peer = ec.EllipticCurvePublicKey.from_encoded_point(private.curve, eph)
        key, iv = key_and_iv(private.exchange(ec.ECDH(), peer), eph, n, zero_iv)
        dec = Cipher(algorithms.AES(key), modes.GCM(iv, tag)).decryptor()
        return dec.update(body) + dec.finalize()

    if sys.argv[1] == "batch":
        for line in sys.stdin:
            command, argument, data, *rest = line.rstrip("\\n").split(" ")
            print(ecies(command, argument, bytes.fromhex(data), rest == ["zero-iv"]).hex(), flush=True)
    else:
        sys.stdout.buffer.write(ecies(sys.argv[1], sys.argv[2], sys.stdin.buffer.read(), sys.argv[-1] == "zero-iv"))
    """
}
