// The file's statements are the engine's item rows as they are.
extension ItemStore: ItemStoring {
    func makeInserter() throws -> any ItemInserting { try prepareInsert() }
    func makeUpdater() throws -> any ItemUpdating { try prepareUpdate() }
    func makeRowReader() throws -> RowReader { try prepareRowReader() }
}

extension ItemStore.Row: StoredItemRow {}
extension ItemStore.Cursor: ItemCursor {}
extension ItemStore.RowReader: ItemRowReading {}
extension ItemStore.Inserter: ItemInserting {}
extension ItemStore.Updater: ItemUpdating {}
