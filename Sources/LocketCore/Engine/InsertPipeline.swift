import Glibc

/// Runs an import's INSERTs on a second thread while the importing thread
/// reads, opens, seals and digests the next items: the two halves cost about
/// the same (issue 15), and the work of one does not wait for the other's.
///
/// Only sealed rows cross (sealed values and digests: no secret). The
/// connection is used by one thread at a time: by the writer while it has
/// rows, and by the importer only once `drain` has returned, when the writer
/// is idle or stopped on an error. The queue is bounded (rows and bytes), so
/// memory stays flat whatever the backup's size. The transaction stays the
/// importer's: `stop` joins the writer before the caller commits or rolls back.
final class InsertPipeline: @unchecked Sendable {
    // @unchecked: every mutable property below is read and written only with
    // `mutex` held, and the inserter only by the thread the protocol above names.

    private let inserter: any ItemInserting
    private let capacity: Int
    private let byteBudget: Int
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Signalled when a row is queued or the writer is told to stop.
    private let work = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Broadcast when the writer finished a row (inserted or failed).
    private let progress = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queue: [SealedItemRow] = []
    private var head = 0
    private var queuedBytes = 0
    private var busy = false
    /// Who is waiting, so that neither side wakes the other for every row
    /// (a wake-up costs more than a row): the writer is woken once a batch is
    /// queued, the importer once the queue is half empty.
    private var writerWaiting = false
    private var importerWaiting = false
    private var stopping = false
    private var failure: (any Error)?
    private var insertedCount = 0
    private var thread: pthread_t?

    /// Starts the writer thread; with none to be had, `submit` inserts in the caller's thread.
    init(_ inserter: any ItemInserting, capacity: Int = 256, byteBudget: Int = 1 << 20) {
        self.inserter = inserter
        self.capacity = capacity
        self.byteBudget = byteBudget
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(work, nil)
        pthread_cond_init(progress, nil)
        var tid = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&tid, nil, { context in
            Unmanaged<InsertPipeline>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        if rc == 0 {
            thread = tid
        } else {
            Unmanaged<InsertPipeline>.fromOpaque(context).release()
        }
    }

    deinit {
        stop()
        pthread_cond_destroy(progress)
        pthread_cond_destroy(work)
        pthread_mutex_destroy(mutex)
        progress.deallocate()
        work.deallocate()
        mutex.deallocate()
    }

    /// Rows inserted so far, in the order they were submitted.
    var inserted: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return insertedCount
    }

    /// Queues `row`, waiting while the queue is full. False, with the row not
    /// queued, when the writer stopped on an error: `drain` says which.
    func submit(_ row: SealedItemRow) -> Bool {
        guard thread != nil else { return insertHere(row) }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while failure == nil && (queue.count - head >= capacity || queuedBytes >= byteBudget && head < queue.count) {
            waitForProgress()
        }
        guard failure == nil else { return false }
        queue.append(row)
        queuedBytes += row.byteCount
        if writerWaiting && queue.count - head >= Self.batch { pthread_cond_signal(work) }
        return true
    }

    /// Rows the writer waits for before it is woken (unless the importer is draining).
    private static let batch = 32

    private func waitForProgress() {
        // The writer may be waiting for a batch that this wait keeps from coming.
        if writerWaiting { pthread_cond_signal(work) }
        importerWaiting = true
        pthread_cond_wait(progress, mutex)
        importerWaiting = false
    }

    /// Waits until every queued row is inserted: nil; or until the writer
    /// stopped on an error: the error and the rows queued after the one that
    /// failed, taken back (the writer waits for `resume`). Either way the
    /// writer is idle when it returns, so the caller may use the connection.
    func drain() -> (error: any Error, rest: [SealedItemRow])? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while failure == nil && (busy || head < queue.count) { waitForProgress() }
        guard let failure else { return nil }
        let rest = Array(queue[head...])
        queue.removeAll()
        head = 0
        queuedBytes = 0
        return (failure, rest)
    }

    /// Lets the writer go on after a failure `drain` reported, with `rows` first.
    func resume(_ rows: [SealedItemRow]) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        failure = nil
        queue.insert(contentsOf: rows, at: head)
        queuedBytes += rows.reduce(0) { $0 + $1.byteCount }
        pthread_cond_signal(work)
    }

    /// Stops the writer (rows still queued are dropped) and waits for it to
    /// end. Called before the transaction ends, whichever way it ends.
    func stop() {
        guard let tid = thread else { return }
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(work)
        pthread_mutex_unlock(mutex)
        pthread_join(tid, nil)
        thread = nil
    }

    private func run() {
        pthread_mutex_lock(mutex)
        while true {
            while !stopping && (failure != nil || head == queue.count) {
                writerWaiting = true
                pthread_cond_wait(work, mutex)
                writerWaiting = false
            }
            if stopping { break }
            let row = queue[head]
            head += 1
            queuedBytes -= row.byteCount
            if head == queue.count || head >= 1024 {
                queue.removeFirst(head)
                head = 0
            }
            busy = true
            pthread_mutex_unlock(mutex)
            var error: (any Error)?
            do { try insert(row) } catch let caught { error = caught }
            pthread_mutex_lock(mutex)
            busy = false
            if let error { failure = error } else { insertedCount += 1 }
            let left = queue.count - head
            if importerWaiting && (failure != nil || left == 0 || left <= capacity / 2 && queuedBytes <= byteBudget / 2) {
                pthread_cond_signal(progress)
            }
        }
        pthread_mutex_unlock(mutex)
    }

    /// Without a second thread: the same protocol, in the caller's.
    private func insertHere(_ row: SealedItemRow) -> Bool {
        if failure != nil { return false }
        do {
            try insert(row)
            insertedCount += 1
        } catch {
            failure = error
        }
        return true
    }

    private func insert(_ row: SealedItemRow) throws {
        try inserter.insert(ref: row.ref, itemClass: row.itemClass, accessible: row.accessible, group: row.group,
                            digests: row.digests, attributes: row.attributes, data: row.data)
    }
}
