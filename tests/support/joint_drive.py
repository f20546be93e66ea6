"""A behavioural model of a joint drive on the joint port: an SPI slave (mode 0, MSB first) in an
Amaranth testbench, with its own bitwise CRC-8/AUTOSAR (written here from the algorithm's
definition, not taken from the gateware's library), for tests/gateware/test_joint_port.py.
"""

from dataclasses import dataclass, field

__all__ = ["crc8_autosar", "word_bits", "bits_word", "feedback_frame", "DriveModel",
           "CommandFrame"]

POLY, INIT, XOROUT = 0x2F, 0xFF, 0xFF
MASK32 = (1 << 32) - 1


def crc8_autosar(bits):
    """CRC-8/AUTOSAR of a bit sequence (MSB-first bits of the message), bit by bit: the
    register shifts left, the polynomial 0x2F is XORed in when the bit leaving it differs from
    the message bit; initial value 0xFF, final XOR 0xFF, not reflected."""
    crc = INIT
    for bit in bits:
        top = (crc >> 7) & 1
        crc = (crc << 1) & 0xFF
        if top ^ bit:
            crc ^= POLY
    return crc ^ XOROUT


def word_bits(value, width):
    """The ``width`` bits of ``value`` (two's complement), most significant first."""
    value &= (1 << width) - 1
    return [(value >> (width - 1 - k)) & 1 for k in range(width)]


def bits_word(bits, signed=False):
    """The integer of MSB-first ``bits``; ``signed``: two's complement."""
    value = 0
    for bit in bits:
        value = (value << 1) | bit
    if signed and bits and bits[0]:
        value -= 1 << len(bits)
    return value


def feedback_frame(q, qd):
    """The 72 bits of a feedback frame: ``q``, ``qd`` (Q15.16 words), then their CRC."""
    payload = word_bits(q, 32) + word_bits(qd, 32)
    return payload + word_bits(crc8_autosar(payload), 8)


@dataclass
class CommandFrame:
    """A command frame as the drive received it."""
    bits: list
    start_cycle: int

    @property
    def i_ref(self):
        return bits_word(self.bits[:32], signed=True)

    @property
    def control(self):
        return bits_word(self.bits[32:40])

    @property
    def reserved(self):
        return bits_word(self.bits[40:64])

    @property
    def crc_ok(self):
        return crc8_autosar(self.bits[:64]) == bits_word(self.bits[64:72])


@dataclass
class DriveModel:
    """The drive side: answers every frame with the next of ``responses`` (72-bit lists; the
    last one repeats), records the command frames, the enable pin as each frame starts and the
    cycles of the rising ``sclk`` edges.

    ``delay``: clock cycles between the falling edge the drive sees and its MISO change.
    """
    responses: list
    delay: int = 0
    commands: list = field(default_factory=list)
    enable_at_start: list = field(default_factory=list)
    sclk_rises: list = field(default_factory=list)

    async def run(self, ctx, drive, frames):
        """Testbench body: serve ``frames`` frames on ``drive`` (a DriveSignature's board
        side: the drive reads sclk, cs_n, mosi, enable and sets miso)."""
        cycle = 0
        prev_cs, prev_sclk = 1, 0
        pending = []                    # (cycle, value) MISO changes
        response, received, position = None, [], 0
        ctx.set(drive.miso, 1)
        start = 0
        while len(self.commands) < frames:
            await ctx.tick()
            cycle += 1
            cs, sclk, mosi = ctx.get(drive.cs_n), ctx.get(drive.sclk), ctx.get(drive.mosi)
            for when, value in [p for p in pending if p[0] <= cycle]:
                ctx.set(drive.miso, value)
            pending = [p for p in pending if p[0] > cycle]
            if prev_cs and not cs:
                index = min(len(self.commands), len(self.responses) - 1)
                response, received, position, start = self.responses[index], [], 1, cycle
                ctx.set(drive.miso, response[0])
                self.enable_at_start.append(ctx.get(drive.enable))
            elif not cs and sclk and not prev_sclk:
                received.append(mosi)
                self.sclk_rises.append(cycle)
            elif not cs and prev_sclk and not sclk and position < len(response):
                pending.append((cycle + self.delay, response[position]))
                position += 1
            elif cs and not prev_cs:
                self.commands.append(CommandFrame(received, start))
                ctx.set(drive.miso, 1)          # released: the pull-up
            prev_cs, prev_sclk = cs, sclk
