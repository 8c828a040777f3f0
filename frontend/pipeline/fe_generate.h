/* fe_generate: the generation pipeline shared by every style (see fe_generate.c). */
#ifndef FE_GENERATE_H
#define FE_GENERATE_H

#include "fe_request.h"

#endif
