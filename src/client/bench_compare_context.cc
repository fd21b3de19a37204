// The built-in shared document of `lockstep bench compare --context builtin`: an invented history of a
// lighthouse (about 620 tokens with a Llama SentencePiece vocabulary, 470 words), and five questions on it.
#include "client/bench_compare.h"

namespace lockstep::client {

std::string BuiltinContext() {
  return "The lighthouse at Kessel Point stands on a granite spur at the mouth of a narrow estuary. The "
         "first light on the site was a wood fire kept in an iron basket, lit by the families of the "
         "fishing village whenever boats were still out after dark. In 1791 the harbour board replaced it "
         "with a stone tower eleven metres tall, topped by a lantern room that held twelve oil lamps, each "
         "set in front of a polished copper reflector. The keeper climbed the stairs four times a night to "
         "trim the wicks, and a ledger from those years records that he burned almost nine hundred litres "
         "of whale oil in one winter.\n\n"
         "The tower proved too short. Ships approaching from the north could not see the light until they "
         "were already among the shoals, and after two wrecks in the storm of 1834 the board raised the "
         "tower by seven metres. The new upper section was built from brick rather than stone, which is "
         "why the tower still shows two colours today: grey below and a faded red above. At the same time "
         "the lamps were replaced by a single burner behind a large glass lens made in France. The lens "
         "bent the light into a horizontal beam, and a clockwork drive, wound by hand every three hours, "
         "turned it so that sailors saw a white flash every ten seconds.\n\n"
         "Life at the station was quiet but demanding. Two keepers shared the work in shifts, and their "
         "families lived in a low cottage beside the tower. Supplies came by boat once a fortnight, "
         "weather permitting; in bad years the families kept goats and a vegetable garden behind a wall "
         "that sheltered it from the salt wind. The keepers also ran a fog signal. At first this was a "
         "bell struck by hand, later a horn driven by compressed air, which the villagers complained could "
         "be heard fifteen kilometres inland.\n\n"
         "Electricity reached Kessel Point in 1952, when a cable was laid along the causeway from the "
         "village. The oil burner was replaced by an electric lamp, and the clockwork by a small motor, so "
         "the keepers no longer had to climb the tower at night. The station was fully automated in 1987. "
         "The last keeper, a woman named Ada Brennan who had grown up in the cottage, stayed on for a year "
         "to train the maintenance crew before she moved to the village.\n\n"
         "Today the light is monitored from a control room in the city, two hundred kilometres away, and a "
         "solar panel charges batteries that keep it running if the cable fails. The cottage has become a "
         "small museum. Its most popular exhibit is the French lens, which was removed from the tower in "
         "1995 and now turns slowly in the main room, still flashing every ten seconds for visitors.";
}

std::vector<std::string> BuiltinContextQuestions() {
  return {"Why was the tower raised in 1834?", "What fuel did the first lamps burn?",
          "How often does the light flash, and how was the lens turned before 1952?",
          "Who was the last keeper, and what did she do after the automation?",
          "How is the light powered and watched today?"};
}

}  // namespace lockstep::client
