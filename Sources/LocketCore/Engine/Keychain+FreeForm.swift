/// Free-form attributes (SPEC §18): the checks and the header flag that the
/// SecItem operations share.
extension Keychain {
    /// Refuses a free-form set that can't be stored: too large, or in a
    /// keychain whose storage lacks `.freeFormAttributes`.
    func checkFreeForm(_ freeForm: FreeForm) throws {
        guard !freeForm.isEmpty else { return }
        try freeForm.validate()
        try require(.freeFormAttributes)
    }

    /// Inside `write`: records in the header that the keychain holds an item
    /// unique by reference, so that no lookup takes the primary-key digest
    /// for the only item it can match (`storeFilter`). Never cleared: a
    /// lookup through the blind rows is as right, only a little slower.
    func markUniqueByReference() throws {
        guard meta[.uniqueByReference] == nil, try storage.readMeta(.uniqueByReference) == nil else { return }
        try storage.writeMeta([(.uniqueByReference, [1])])
    }
}
