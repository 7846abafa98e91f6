// Node.js Kafka clients against `groupcoord serve` (tests/test_client_matrix.py runs this).
//
//   node matrix.mjs CLIENT SUITE BOOTSTRAP
//
// CLIENT: kafkajs (kafkajs 2.2.4, classic groups), plt-consumer (@platformatic/kafka with
// groupProtocol 'consumer', KIP-848), plt-classic (@platformatic/kafka, classic groups).
// SUITE:  stream  a group of three loses a member mid-stream, the server is restarted (the
//                 script prints {"event":"restart"} and waits for a line on stdin), nothing is
//                 lost and the committed offsets reach the log end;
//         group   a leave frees the member's partitions well before the session timeout, a
//                 static member restarts with its instance id, and the admin calls.
// Every check is one JSON line {"check": NAME, "ok": BOOL, "detail": ...}; the last line is
// {"event":"done"}. Several checks per process keep the cost of a client bounded.

import { createInterface } from 'node:readline'
import kafkajs from 'kafkajs'
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'

const [client, suite, bootstrap] = process.argv.slice(2)
const brokers = [bootstrap]
const run = `${client}-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`
const WAIT_MS = 45_000
// Group and client timeouts long enough that only a leave (never a session expiry) can explain
// a fast hand-over: the leave checks require it within half of SESSION_MS.
const SESSION_MS = 60_000
// The stream suite's: kafkajs rejoins under a new member id after the server restart (it
// recreates its group membership when a connection fails), so the group waits for the old
// members' sessions to expire before it rebalances, as a Kafka broker would.
const STREAM_SESSION_MS = 10_000

const out = obj => process.stdout.write(JSON.stringify(obj, (_, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n')
const check = (name, ok, detail) => out({ check: name, ok: Boolean(ok), detail })
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function until (what, cond, timeout = WAIT_MS) {
  const deadline = Date.now() + timeout
  while (Date.now() < deadline) {
    if (await cond()) return true
    await sleep(100)
  }
  throw new Error(`timed out waiting for ${what}`)
}

const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
async function restartServer () {
  out({ event: 'restart' })
  await stdinLines.next()
}

// ------------------------------------------------------------------------------ adapters

function kafkajsAdapter () {
  const kafka = new kafkajs.Kafka({
    clientId: run,
    brokers,
    logLevel: kafkajs.logLevel.NOTHING,
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 60 }
  })
  const admin = kafka.admin()
  const producer = kafka.producer()
  return {
    protocol: 'classic',
    static: false,
    async start () { await admin.connect(); await producer.connect() },
    async stop () { await producer.disconnect(); await admin.disconnect() },
    async createTopic (topic, partitions) {
      await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true })
    },
    async produce (topic, values, partitions) {
      for (let i = 0; i < values.length; i += 50) {
        await producer.send({ topic, messages: values.slice(i, i + 50).map((v, k) => ({ value: v, partition: (i + k) % partitions })) })
      }
    },
    async consumer (groupId, topic, onMessage, instanceId, sessionMs = SESSION_MS) {
      const c = kafka.consumer({ groupId, sessionTimeout: sessionMs, rebalanceTimeout: sessionMs, heartbeatInterval: 500, maxWaitTimeInMs: 200 })
      let assigned = []
      const last = new Map()
      c.on(c.events.GROUP_JOIN, e => {
        assigned = Object.entries(e.payload.memberAssignment).flatMap(([t, ps]) => ps.map(p => `${t}:${p}`))
      })
      await c.connect()
      await c.subscribe({ topic, fromBeginning: true })
      await c.run({
        autoCommitThreshold: 1,
        eachMessage: async ({ topic: t, partition, message }) => {
          last.set(`${t}:${partition}`, BigInt(message.offset) + 1n)
          onMessage(message.value.toString())
        }
      })
      return {
        assignment: () => assigned,
        async commitLast () {
          const offsets = [...last].filter(([k]) => assigned.includes(k))
            .map(([k, o]) => ({ topic: k.slice(0, k.lastIndexOf(':')), partition: Number(k.slice(k.lastIndexOf(':') + 1)), offset: o.toString() }))
          if (offsets.length) await c.commitOffsets(offsets)
        },
        async close () { await c.disconnect() }
      }
    },
    async logEnd (topic) {
      return new Map((await admin.fetchTopicOffsets(topic)).map(p => [p.partition, BigInt(p.high)]))
    },
    async committed (groupId, topic) {
      const [t] = await admin.fetchOffsets({ groupId, topics: [topic] })
      return new Map(t.partitions.map(p => [p.partition, BigInt(p.offset)]))
    },
    async listGroups () {
      return (await admin.listGroups()).groups.map(g => ({ id: g.groupId, protocolType: g.protocolType }))
    },
    async describe (groupId) {
      const [g] = (await admin.describeGroups([groupId])).groups
      return { state: g.state, members: g.members.map(m => m.memberId), errorCode: g.errorCode }
    },
    async alterOffsets (groupId, topic, offsets) {
      await admin.setOffsets({ groupId, topic, partitions: offsets.map(([partition, offset]) => ({ partition, offset: String(offset) })) })
    },
    async deleteGroup (groupId) { await admin.deleteGroups([groupId]) },
    errorCodes (e) {
      const codes = [e.type, ...(e.groups ?? []).map(g => g.error?.type), e.cause?.type]
      // kafkajs' setOffsets describes the group first and refuses a group with members itself
      if (/must have no running instances/.test(e.message)) codes.push('REFUSED_BY_THE_CLIENT')
      return codes.filter(Boolean)
    }
  }
}

function platformaticAdapter (groupProtocol) {
  const base = { clientId: run, bootstrapBrokers: brokers, retries: 60, retryDelay: 250, timeout: 10_000 }
  const admin = new Admin(base)
  const producer = new Producer({ ...base, serializers: stringSerializers })
  const classic = groupProtocol === 'classic'
  return {
    protocol: groupProtocol,
    static: true,
    async start () {},
    async stop () { await producer.close(); await admin.close() },
    async createTopic (topic, partitions) {
      await admin.createTopics({ topics: [topic], partitions, replicas: 1 })
    },
    async produce (topic, values, partitions) {
      for (let i = 0; i < values.length; i += 50) {
        await producer.send({ messages: values.slice(i, i + 50).map((v, k) => ({ topic, value: v, partition: (i + k) % partitions })) })
      }
    },
    async consumer (groupId, topic, onMessage, instanceId, sessionMs = SESSION_MS) {
      const options = classic
        ? { sessionTimeout: sessionMs, rebalanceTimeout: sessionMs, heartbeatInterval: 500 }
        : { groupProtocol: 'consumer', rebalanceTimeout: SESSION_MS } // (its session timeout is the group's)
      const c = new Consumer({ ...base, groupId, deserializers: stringDeserializers, maxWaitTime: 200, ...options, ...(instanceId ? { groupInstanceId: instanceId } : {}) })
      const last = new Map()
      const stream = await c.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest', autocommit: false })
      stream.on('data', message => {
        last.set(`${message.topic}:${message.partition}`, message)
        onMessage(message.value)
        Promise.resolve(message.commit()).catch(() => {}) // retried by commitLast
      })
      stream.on('error', () => {})
      c.on('error', () => {})
      const assignment = () => (c.assignments ?? []).flatMap(a => a.partitions.map(p => `${a.topic}:${p}`))
      return {
        assignment,
        async commitLast () {
          const owned = new Set(assignment())
          for (const [k, m] of last) if (owned.has(k)) await m.commit()
        },
        async close () { await stream.close(); await c.close() }
      }
    },
    async logEnd (topic) {
      const md = await admin.metadata({ topics: [topic] })
      const n = md.topics.get(topic).partitionsCount
      const [t] = await admin.listOffsets({ topics: [{ name: topic, partitions: [...Array(n).keys()].map(p => ({ partitionIndex: p, timestamp: -1n })) }] })
      return new Map(t.partitions.map(p => [p.partitionIndex, BigInt(p.offset)]))
    },
    async committed (groupId, topic) {
      const [g] = await admin.listConsumerGroupOffsets({ groups: [groupId] })
      const t = g.topics.find(x => x.name === topic)
      return new Map((t?.partitions ?? []).map(p => [p.partitionIndex, BigInt(p.committedOffset)]))
    },
    async listGroups (types) {
      // (its admin lists only classic groups unless told which types)
      return [...(await admin.listGroups({ types: types ?? ['classic', 'consumer'] })).values()].map(g => ({ id: g.id, protocolType: g.protocolType, groupType: g.groupType, state: g.state }))
    },
    async describe (groupId) {
      const g = (await admin.describeGroups({ groups: [groupId] })).get(groupId)
      return { state: g.state, members: [...g.members.keys()], protocolType: g.protocolType }
    },
    async alterOffsets (groupId, topic, offsets) {
      await admin.alterConsumerGroupOffsets({ groupId, topics: [{ name: topic, partitionOffsets: offsets.map(([partition, offset]) => ({ partition, offset: BigInt(offset) })) }] })
    },
    async deleteGroup (groupId) { await admin.deleteGroups({ groups: [groupId] }) },
    async removeMembers (groupId, members) { await admin.removeMembersFromConsumerGroup({ groupId, members }) },
    async setSessionTimeout (groupId, ms) {
      await admin.incrementalAlterConfigs({ resources: [{ resourceType: 32, resourceName: groupId, configs: [{ name: 'consumer.session.timeout.ms', configOperation: 0, value: String(ms) }] }] })
    },
    errorCodes (e) {
      const all = []
      const walk = x => {
        if (!x || typeof x !== 'object' || all.length > 20) return
        if (x.apiCode !== undefined) all.push(x.apiId ?? x.apiCode)
        for (const y of x.errors ?? []) walk(y)
        if (x.cause) walk(x.cause)
      }
      walk(e)
      return all
    }
  }
}

const adapter = client === 'kafkajs' ? kafkajsAdapter() : platformaticAdapter(client === 'plt-consumer' ? 'consumer' : 'classic')

// ------------------------------------------------------------------------------ helpers

async function expectError (what, fn, codes) {
  try {
    await fn()
    return { ok: false, detail: `${what}: no error` }
  } catch (e) {
    const got = adapter.errorCodes(e)
    return { ok: got.some(c => codes.includes(c)), detail: `${what}: ${JSON.stringify(got)} (${e.message})` }
  }
}

async function offsetsAtLogEnd (groupId, topic, members) {
  const end = await adapter.logEnd(topic)
  let committed = new Map()
  try {
    await until('committed offsets at the log end', async () => {
      committed = await adapter.committed(groupId, topic)
      if ([...end].every(([p, o]) => committed.get(p) === o)) return true
      for (const m of members) await m.commitLast().catch(() => {})
      return false
    })
    return { ok: true, detail: Object.fromEntries(end) }
  } catch (e) {
    return { ok: false, detail: { end: Object.fromEntries(end), committed: Object.fromEntries(committed) } }
  }
}

// ------------------------------------------------------------------------------ suites

async function streamSuite () {
  const topic = `${run}-s`
  const groupId = `${run}-g3`
  const partitions = 6
  await adapter.createTopic(topic, partitions)
  const first = Array.from({ length: 300 }, (_, i) => `m${i}`)
  const second = Array.from({ length: 300 }, (_, i) => `m${300 + i}`)
  await adapter.produce(topic, first, partitions)
  const seen = new Set()
  const members = []
  for (let i = 0; i < 3; i++) members.push(await adapter.consumer(groupId, topic, v => seen.add(v), undefined, STREAM_SESSION_MS))
  const all = [...Array(partitions).keys()].map(p => `${topic}:${p}`)
  const covers = ms => {
    const shares = ms.map(m => m.assignment())
    const union = new Set(shares.flat())
    return shares.every(s => s.length > 0) && shares.flat().length === union.size && all.every(tp => union.has(tp))
  }
  await until('three members sharing the topic', () => covers(members))
  check('three-members-share-the-partitions', true, members.map(m => m.assignment()))
  await until('some messages consumed', () => seen.size >= 60)
  const lost = members.pop()
  await lost.close() // a member is lost mid-stream
  await until('two members taking over', () => covers(members))
  check('two-members-take-over', true, members.map(m => m.assignment()))
  await restartServer()
  await adapter.produce(topic, second, partitions)
  const produced = [...first, ...second]
  try {
    await until('every message consumed', () => produced.every(v => seen.has(v)), 90_000)
    check('nothing-lost-across-member-loss-and-restart', true, { produced: produced.length, seen: seen.size })
  } catch (e) {
    check('nothing-lost-across-member-loss-and-restart', false, { missing: produced.filter(v => !seen.has(v)).slice(0, 20) })
  }
  const r = await offsetsAtLogEnd(groupId, topic, members)
  check('committed-offsets-at-log-end', r.ok, r.detail)
  for (const m of members) await m.close()
}

async function leaveCheck () {
  const topic = `${run}-l`
  const groupId = `${run}-leave`
  await adapter.createTopic(topic, 4)
  if (adapter.setSessionTimeout) await adapter.setSessionTimeout(groupId, SESSION_MS)
  const x = await adapter.consumer(groupId, topic, () => {})
  const y = await adapter.consumer(groupId, topic, () => {})
  await until('two members sharing four partitions', () => x.assignment().length === 2 && y.assignment().length === 2)
  const t0 = Date.now()
  await x.close()
  await until('the other member holding every partition', () => y.assignment().length === 4, SESSION_MS)
  const elapsed = Date.now() - t0
  check('leave-frees-partitions-before-session-timeout', elapsed < SESSION_MS / 2, { elapsed_ms: elapsed, session_timeout_ms: SESSION_MS })
  await y.close()
}

async function staticCheck () {
  const topic = `${run}-st`
  const groupId = `${run}-static`
  await adapter.createTopic(topic, 2)
  if (adapter.setSessionTimeout) await adapter.setSessionTimeout(groupId, SESSION_MS)
  const first = await adapter.consumer(groupId, topic, () => {}, 'instance-1')
  await until('the static member assigned', () => first.assignment().length === 2)
  await first.close()
  const t0 = Date.now()
  const again = await adapter.consumer(groupId, topic, () => {}, 'instance-1')
  await until('the restarted static member assigned', () => again.assignment().length === 2, SESSION_MS)
  const elapsed = Date.now() - t0
  const d = await adapter.describe(groupId).catch(() => undefined)
  check('static-member-restarts-with-its-instance-id', elapsed < SESSION_MS / 2, { elapsed_ms: elapsed, describe: d })
  await again.close()
}

async function adminChecks () {
  const topic = `${run}-a`
  const groupId = `${run}-admin`
  await adapter.createTopic(topic, 2)
  await adapter.produce(topic, Array.from({ length: 20 }, (_, i) => `a${i}`), 2)
  const seen = new Set()
  const m = await adapter.consumer(groupId, topic, v => seen.add(v))
  await until('the admin group consuming', () => seen.size === 20)
  const r = await offsetsAtLogEnd(groupId, topic, [m])
  check('admin-fetch-offsets', r.ok, r.detail)

  // list: the group with its type (ListGroups v5 types for the platformatic admin)
  const listed = (await adapter.listGroups()).find(g => g.id === groupId)
  check('admin-list-groups', listed && listed.protocolType === 'consumer' &&
    (listed.groupType === undefined || listed.groupType === adapter.protocol), listed)
  if (adapter.protocol !== 'classic') {
    const typed = (await adapter.listGroups(['classic'])).some(g => g.id === groupId)
    check('admin-list-groups-type-filter', !typed, { listed_as_classic: typed })
  }

  // describe: DescribeGroups is the classic groups' API; Kafka 4.3 describes a consumer group
  // with ConsumerGroupDescribe and answers DescribeGroups GROUP_ID_NOT_FOUND (v6) / Dead (v5)
  const d = await adapter.describe(groupId).catch(e => ({ error: adapter.errorCodes(e) }))
  if (adapter.protocol === 'classic') {
    check('admin-describe-group', d.state?.toUpperCase() === 'STABLE' && d.members.length === 1, d)
  } else {
    check('admin-describe-group', d.state?.toUpperCase() === 'DEAD' || JSON.stringify(d.error ?? []).includes('GROUP_ID_NOT_FOUND'), d)
  }

  // alter offsets and delete the group while it has a member: refused, as Kafka refuses them
  const busy = await expectError('alter offsets of a group with a member',
    () => adapter.alterOffsets(groupId, topic, [[0, 1]]), ['UNKNOWN_MEMBER_ID', 25, 'REFUSED_BY_THE_CLIENT'])
  check('admin-alter-offsets-refused-while-active', busy.ok, busy.detail)
  const nonEmpty = await expectError('delete a group with a member',
    () => adapter.deleteGroup(groupId), ['NON_EMPTY_GROUP', 68])
  check('admin-delete-group-refused-while-active', nonEmpty.ok, nonEmpty.detail)

  if (adapter.removeMembers && adapter.protocol === 'classic') {
    const before = await adapter.describe(groupId)
    await adapter.removeMembers(groupId, before.members.map(memberId => ({ memberId })))
    let after
    await until('the removed member gone (or back under a new id)', async () => {
      after = await adapter.describe(groupId)
      return !after.members.some(x => before.members.includes(x))
    })
    check('admin-remove-members', true, { before: before.members, after: after.members })
  }
  await m.close()

  await adapter.alterOffsets(groupId, topic, [[0, 3], [1, 4]])
  const altered = await adapter.committed(groupId, topic)
  check('admin-alter-offsets', altered.get(0) === 3n && altered.get(1) === 4n, Object.fromEntries(altered))
  await adapter.deleteGroup(groupId)
  const gone = !(await adapter.listGroups()).some(g => g.id === groupId)
  const again = await expectError('delete a deleted group', () => adapter.deleteGroup(groupId),
    ['GROUP_ID_NOT_FOUND', 69])
  check('admin-delete-group', gone && again.ok, { listed_after_delete: !gone, again: again.detail })
}

// ------------------------------------------------------------------------------ main

try {
  await adapter.start()
  if (suite === 'stream') {
    await streamSuite()
  } else {
    for (const step of [leaveCheck, ...(adapter.static ? [staticCheck] : []), adminChecks]) {
      try {
        await step()
      } catch (e) {
        check(step.name, false, String(e?.stack ?? e))
      }
    }
  }
  await adapter.stop()
} catch (e) {
  check('suite', false, String(e?.stack ?? e))
}
out({ event: 'done' })
process.exit(0)
