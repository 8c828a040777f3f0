/*
 * sb_protocol: the Switchboard job protocol, written once (as zguide's mdp.h).
 * docs/protocol.md explains it in prose; this header is the source of truth.
 *
 * Topology:
 *   frontend DEALER --connect--> broker ROUTER (SB_BROKER_FRONTEND_ENDPOINT)
 *   worker   DEALER --connect--> broker ROUTER (SB_BROKER_WORKER_ENDPOINT)
 *
 * Every message, as a DEALER sends or receives it, is:
 *   frame 0: one byte, the command (SB_CMD_*)
 *   frame 1: msgpack map, the header (fields per command below); may be absent
 *            only for SB_CMD_HEARTBEAT and SB_CMD_RECONNECT
 *   frame 2: msgpack bytes, the body (SUBMIT/JOB: the job; EVENT: the event)
 * On a ROUTER the routing id frame comes first. The broker forwards frame 2
 * untouched: it never decodes job or event bodies.
 *
 * Commands and header fields (all keys are msgpack strings):
 *   SUBMIT    frontend->broker  {job_id:str, model:str, deadline_ms:int,
 *                                  client?:str, epoch?:str}
 *             + body: the job (see sb_job.h). deadline_ms is absolute, epoch ms.
 *             client (optional, <= SB_CLIENT_ID_MAX bytes) names who asked,
 *             opaque to the broker ("key:<key id>" from the frontend): the
 *             circuit breakers keep a circuit per (model, client), so that
 *             one client's failing requests do not deny the model to others.
 *             epoch (optional): the broker instance the frontend believes it
 *             submits to. A broker with another epoch refuses the job (503
 *             broker_restarted, header refused_epoch = that epoch) instead of
 *             running a job its submitter already counts as lost.
 *   CANCEL    frontend->broker, broker->worker  {job_id:str}
 *   EVENT     worker->broker, broker->frontend  {job_id:str, final:bool}
 *             + body: one canonical event (see sb_event.h). final=true marks the
 *             job's last event (completed or error); the broker then frees the
 *             worker's credit. A worker adds seq (below).
 *   READY     worker->broker  {models:[str], credits:int, name:str, seq?:int}
 *             models may contain "*" (serves every model). Sent at start, on a
 *             fresh socket, and once per real RECONNECT (below). A READY from
 *             a worker the broker already knows re-registers it in place.
 *   JOB       broker->worker  same header and body as SUBMIT.
 *   HEARTBEAT both ways on both sockets. The broker answers a frontend's
 *             heartbeat with one of its own. A worker's carries {seq}.
 *   RECONNECT broker->worker: "I do not know you" (e.g. broker restarted),
 *             header {epoch, seq?}: seq echoes the seq of the worker message
 *             it answers. A RECONNECT echoing a seq older than the worker's
 *             latest READY answers a message sent before that READY and is
 *             ignored; otherwise the worker drops its in-flight jobs and sends
 *             READY (seq + 1) once.
 *
 * Broker epoch: each broker process draws a random instance id at start
 * (SB_EPOCH_HEX_LEN hex digits) and puts it, as "epoch", in the header of
 * every message it sends (HEARTBEAT, EVENT, JOB, CANCEL, RECONNECT). A
 * frontend that sees the epoch change knows the broker restarted and lost
 * every job it held: it resubmits (or fails) its outstanding jobs at once
 * rather than waiting for their deadlines. A worker that sees it change drops
 * the jobs of the old broker.
 *
 * Worker seq: the number of READYs the worker's session has sent (1 for the
 * first), carried in its READY, HEARTBEAT and EVENT headers, so that a burst
 * of RECONNECTs answering messages buffered while the broker was down makes
 * one READY, not one each.
 *
 * Several brokers (docs/protocol.md): brokers run active-active and know
 * nothing of each other; each frontend and worker holds one DEALER per
 * broker. A frontend sends each job to one broker and listens to it alone;
 * a worker serves all of them and shares its credits: it tells each broker
 * its window, the JOBs (counted since its READY to that broker) the broker
 * may have sent it in all, in CREDIT {window, seq} and in HEARTBEAT.
 *
 * Liveness: a peer that has heard nothing (any message counts) from the other
 * for SB_HEARTBEAT_INTERVAL_MS * SB_HEARTBEAT_LIVENESS ms treats it as dead.
 * A broker that has just started waits that long for workers to register
 * before it answers a job for a model nobody serves 503 no_workers.
 */
#ifndef SB_PROTOCOL_H
#define SB_PROTOCOL_H

#define SB_PROTOCOL_VERSION 2

enum sb_cmd {
    SB_CMD_SUBMIT = 0x01,
    SB_CMD_CANCEL = 0x02,
    SB_CMD_EVENT = 0x03,
    SB_CMD_HEARTBEAT = 0x04,
    SB_CMD_ACCEPTED = 0x05, /* broker -> frontend: a SUBMIT that asked ("ack": true) is queued */
    SB_CMD_STATS = 0x06,    /* frontend -> broker {"stats_id"}: asks for the live state; the broker
                               answers STATS {"stats_id", "stats": {...}} (docs/protocol.md) */
    SB_CMD_READY = 0x10,
    SB_CMD_JOB = 0x11,
    SB_CMD_RECONNECT = 0x12,
    SB_CMD_CREDIT = 0x13, /* worker -> broker {"window", "seq"}: a worker serving several brokers shares its
                             credits; window = JOBs (since that READY) this broker may have sent in all */
};

#define SB_HEARTBEAT_INTERVAL_MS 500
#define SB_HEARTBEAT_LIVENESS 5 /* dead after 2.5 s of silence */

#define SB_BROKER_FRONTEND_ENDPOINT_DEFAULT "tcp://127.0.0.1:5555"
#define SB_BROKER_WORKER_ENDPOINT_DEFAULT "tcp://127.0.0.1:5556"

/* Limits every peer enforces on what it receives. */
#define SB_MAX_FRAME_BYTES (64u * 1024u * 1024u)
#define SB_MAX_MSGPACK_DEPTH 64

#define SB_JOB_ID_MAX 64
#define SB_RESPONSE_ID_MAX 128 /* a background job's response id (SUBMIT "background") */
#define SB_MODEL_ID_MAX 128
#define SB_CLIENT_ID_MAX 64
/* A broker epoch: 64 random bits in hex. Receivers accept any string up to
 * SB_EPOCH_MAX bytes. */
#define SB_EPOCH_HEX_LEN 16
#define SB_EPOCH_MAX 64

#endif
