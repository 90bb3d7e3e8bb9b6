/// Scripts that check locket against independent implementations, for the
/// engine's tests and the end-to-end tests alike.
public enum InteropScripts {
    /// Apple's kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM,
    /// written again with Python's `cryptography` package from the description
    /// in SecKeyAdaptors: `encrypt HEXPOINT` or `decrypt KEY.pem`, data on
    /// stdin; a last argument `zero-iv` for the variants without the variable
    /// IV (kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM).
    public static let ecies = """
    import sys
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF

    CURVES = {65: ec.SECP256R1(), 97: ec.SECP384R1(), 133: ec.SECP521R1()}

    def key_and_iv(z, ephemeral, point_length):
        # AES-128 up to 256-bit curves, AES-256 above; then a 16-byte IV, or zeros.
        aes = 32 if (point_length - 1) // 2 * 8 > 256 else 16
        if sys.argv[-1] == "zero-iv":
            return X963KDF(algorithm=hashes.SHA256(), length=aes, sharedinfo=ephemeral).derive(z), bytes(16)
        out = X963KDF(algorithm=hashes.SHA256(), length=aes + 16, sharedinfo=ephemeral).derive(z)
        return out[:aes], out[aes:]

    data = sys.stdin.buffer.read()
    if sys.argv[1] == "encrypt":
        point = bytes.fromhex(sys.argv[2])
        curve = CURVES[len(point)]
        recipient = ec.EllipticCurvePublicKey.from_encoded_point(curve, point)
        ephemeral = ec.generate_private_key(curve)
        eph = ephemeral.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        key, iv = key_and_iv(ephemeral.exchange(ec.ECDH(), recipient), eph, len(point))
        enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
        body = enc.update(data) + enc.finalize()
        sys.stdout.buffer.write(eph + body + enc.tag)
    else:
        private = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), None)
        n = 1 + 2 * ((private.curve.key_size + 7) // 8)
        eph, body, tag = data[:n], data[n:-16], data[-16:]
        peer = ec.EllipticCurvePublicKey.from_encoded_point(private.curve, eph)
        key, iv = key_and_iv(private.exchange(ec.ECDH(), peer), eph, n)
        dec = Cipher(algorithms.AES(key), modes.GCM(iv, tag)).decryptor()
        sys.stdout.buffer.write(dec.update(body) + dec.finalize())
    """
}
